// Package worklock keeps two runs off one work file. Acquire takes an
// exclusive lock on a lock file beside the work (flock(2), never waiting):
// a second run asking for the same lock, in this process or another, is
// refused at once with ErrBusy, which names the holder's process id. The
// kernel drops a lock when its holder ends, however it ends (a kill, a
// crash, a power cut), so a stale lock never blocks a later run. Release
// removes the lock file; one left by a killed process is taken over, and
// then removed, by the next run.
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
// holds, a *BusyError.
var ErrBusy = errors.New("held by another run")

// BusyError is Acquire's error while another run holds the lock.
type BusyError struct {
	Path   string // the lock file
	Holder string // "process N" as its lock file says, else "another run"
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

// Acquire takes the lock file path (made when missing, in a folder that
// must exist) for this run, or fails at once: with ErrBusy while another
// run holds it.
func Acquire(path string) (*Lock, error) {
	for try := 0; try < maxTries; try++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("worklock: %w", err)
		}
		if err := lockFile(f); err != nil {
			holder := readHolder(f)
			f.Close()
			if errors.Is(err, errWouldBlock) {
				return nil, &BusyError{Path: path, Holder: holder}
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
			_, err = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		return &Lock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("worklock: %s kept changing under %d tries to lock it: %w", path, maxTries, ErrBusy)
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

// readHolder is the holder's "pid N" as its lock file says it, bounded.
func readHolder(f *os.File) string {
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "another run"
	}
	s := strings.TrimSpace(string(buf[:n]))
	if pid, ok := strings.CutPrefix(s, "pid "); ok {
		if _, err := strconv.Atoi(pid); err == nil {
			return "process " + pid
		}
	}
	return "another run"
}
