package mnist

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/internal/worklock"
)

// ErrWork is wrapped by every error about a work folder (DFX_MNIST_MODEL_WORK,
// DFX_MNIST_DENSITY_WORK) whose files are malformed or were made for
// other settings.
var ErrWork = errors.New("unusable work file")

// checkWorkDir checks, before any work, that a work folder is a folder
// this process can write (it is made when missing), so that a run of hours
// does not fail at its first save.
func checkWorkDir(who, dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%s: work folder %s is not a folder: %w", who, dir, ErrWork)
	}
	if err := outfile.CheckFolderFor(dir); err != nil { // before anything is made
		return fmt.Errorf("%s: work folder %s: %v: %w", who, dir, err, ErrWork)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: work folder: %v: %w", who, err, ErrWork)
	}
	if err := outfile.CheckFolder(dir); err != nil {
		return fmt.Errorf("%s: work folder %s: %v: %w", who, dir, err, ErrWork)
	}
	return nil
}

// lockWork keeps two runs off the work file name in dir (what names it
// in messages: the file, or the folder when the lock covers it all): it
// takes the lock .<name>.lock there (worklock) for the run, which Releases
// it when done. Another run holding it, or a lock that cannot be taken, is
// an ErrWork, said at once; where files cannot be locked (a platform
// without flock, a filesystem that refuses it) the run goes on unlocked,
// saying so on log. dir "" keeps no work and takes no lock (a nil Lock,
// whose Release is a no-op).
func lockWork(who, dir, name, what string, log io.Writer) (*worklock.Lock, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: work folder: %v: %w", who, err, ErrWork)
	}
	l, err := worklock.Acquire(filepath.Join(dir, "."+name+".lock"))
	var busy *worklock.BusyError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &busy):
		return nil, fmt.Errorf("%s: %s is in use by %s: wait for it to end, or give this run another folder: %w", who, what, busy.Holder, ErrWork)
	case errors.Is(err, worklock.ErrUnsupported):
		if log != nil {
			fmt.Fprintf(log, "%s: %s is not locked (%v): nothing keeps a second run off it\n", who, what, err)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("%s: cannot lock %s: %v: %w", who, what, err, ErrWork)
}

// probeWork says, before a run starts, whether lockWork would refuse it
// (another run holds the lock); the run itself takes the lock.
func probeWork(who, dir, name, what string) error {
	l, err := lockWork(who, dir, name, what, nil)
	if err != nil {
		return err
	}
	return l.Release()
}

// CheckTrainFree is an error (ErrWork) while another run trains the
// network name into the state folder dir (TrainNetwork's lock), so that
// `dfx train` says so before it looks at the saved state.
func CheckTrainFree(dir, name string) error {
	return probeWork("train "+name, dir, filepath.Base(statePath(dir, name)), statePath(dir, name))
}

// maxWorkFile bounds the size of a work file read back (the largest, the
// full density experiment's, is a few MB).
const maxWorkFile = 256 << 20

// readStrict decodes the JSON file path into v, refusing unknown fields,
// trailing data and files over maxWorkFile; found is false when there is
// no such file. who prefixes the messages.
func readStrict(who, path string, v any) (found bool, err error) {
	raw, err := input.ReadAll(path, maxWorkFile) // a regular file, its size checked before it is read
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s: work file %v: %w", who, err, ErrWork)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return true, fmt.Errorf("%s: %s: %v: %w", who, path, err, ErrWork)
	}
	if _, err := dec.Token(); err != io.EOF {
		return true, fmt.Errorf("%s: %s: data after the JSON value: %w", who, path, ErrWork)
	}
	return true, nil
}

// ReadWorkFile is readStrict, for the studies that keep their work files
// beside this package's (studies/model).
func ReadWorkFile(who, path string, v any) (found bool, err error) { return readStrict(who, path, v) }

// LockWork is lockWork, for the studies that keep their work files beside
// this package's.
func LockWork(who, dir, name, what string, log io.Writer) (*worklock.Lock, error) {
	return lockWork(who, dir, name, what, log)
}

// ProbeWork is probeWork, for the studies that keep their work files
// beside this package's.
func ProbeWork(who, dir, name, what string) error { return probeWork(who, dir, name, what) }

// CheckWorkDir is checkWorkDir, for the studies that keep their work files
// beside this package's.
func CheckWorkDir(who, dir string) error { return checkWorkDir(who, dir) }
