// Package worklock keeps two runs off one work file. Acquire takes an
// exclusive lock on a lock file beside the work (flock(2), never waiting):
// a second run asking for the same lock, in this process or another, is
// refused at once with a *BusyError (ErrBusy), which names the holder's
// process and host. The kernel drops a lock when its holder ends, however
// it ends (a kill, a crash, a power cut), so a stale lock never blocks a
// later run. Release removes the lock file; one left by a killed process
// is taken over, and then removed, by the next run.
//
// Where files cannot be locked (Supported is false: Windows, Solaris, AIX,
// wasm; or a filesystem that refuses flock, ErrUnsupported), runs are not
// kept apart, and Acquire says so. On NFS, flock is emulated with POSIX
// locks, which do not keep two runs of one process apart.
package worklock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// ErrBusy is matched (errors.Is) by the error of a lock another run
// holds.
var ErrBusy = errors.New("held by another run")

// ErrUnsupported is matched by the error of a lock this platform or
// filesystem cannot take.
var ErrUnsupported = errors.New("files cannot be locked here")

// BusyError is Acquire's error while another run holds the lock.
type BusyError struct {
	Path   string // the lock file
	Holder string // "process N on host H" as its lock file says, else "another run"
}

func (e *BusyError) Error() string        { return e.Path + " is held by " + e.Holder }
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Lock is a held lock; Release gives it back.
type Lock struct {
	f    *os.File
	path string
}

// maxTries bounds the retries when the lock file is removed or replaced
// between opening and locking it (its holder releasing it meanwhile).
const maxTries = 16

// betweenOpenAndLock, when set (by tests), runs between opening the lock
// file and locking it: where a holder's release can fall.
var betweenOpenAndLock func()

// Acquire takes the lock file path (made when missing, in a folder that
// must exist) for this run, or fails at once: with a *BusyError while
// another run holds it, ErrUnsupported where locks cannot be taken.
func Acquire(path string) (*Lock, error) {
	if !Supported {
		return nil, fmt.Errorf("worklock: %s: %w (%s)", path, ErrUnsupported, platform)
	}
	for try := 0; try < maxTries; try++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("worklock: %w", err)
		}
		if betweenOpenAndLock != nil {
			betweenOpenAndLock()
		}
		if err := lockFile(f); err != nil {
			holder := readHolder(f)
			f.Close()
			switch {
			case errors.Is(err, errWouldBlock):
				return nil, &BusyError{Path: path, Holder: holder}
			case unsupported(err):
				return nil, fmt.Errorf("worklock: %s: %w (%v)", path, ErrUnsupported, err)
			}
			return nil, fmt.Errorf("worklock: %s: %w", path, err)
		}
		// The holder before us removes the file before unlocking it: a lock
		// won on a file no longer at path protects nothing, so try again.
		held, errHeld := f.Stat()
		now, errNow := os.Stat(path)
		if errHeld != nil || errNow != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(holderLine()), 0)
		}
		return &Lock{f: f, path: path}, nil
	}
	return nil, &BusyError{Path: path, Holder: fmt.Sprintf("runs that replaced it under %d tries to lock it", maxTries)}
}

// Release removes the lock file and gives the lock back; a nil or
// released lock is a no-op.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	errRm := os.Remove(l.path) // first, while still held: see Acquire
	errClose := l.f.Close()    // closing the last descriptor unlocks
	l.f = nil
	if errRm != nil && !errors.Is(errRm, os.ErrNotExist) {
		return errRm
	}
	return errClose
}

// holderLine is what a holder writes into its lock file.
func holderLine() string {
	host, err := os.Hostname()
	if err != nil || host == "" || strings.ContainsAny(host, " \n") {
		host = "?"
	}
	return "pid " + strconv.Itoa(os.Getpid()) + " host " + host + "\n"
}

// readHolder is the holder as its lock file says ("process N on host H"),
// read bounded; "another run" when the file says nothing readable (a lock
// taken by another tool, or not yet written).
func readHolder(f *os.File) string {
	buf := make([]byte, 128)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "another run"
	}
	var pid int
	var host string
	if k, _ := fmt.Sscanf(string(buf[:n]), "pid %d host %s", &pid, &host); k == 2 && pid > 0 {
		return fmt.Sprintf("process %d on host %s", pid, host)
	}
	return "another run"
}
