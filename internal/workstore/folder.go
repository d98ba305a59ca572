// Package workstore keeps an experiment's finished work in a folder, so
// that a run of hours resumes where an earlier one stopped, or reads what
// another machine (a GPU) computed: rows keyed by name, saved after each,
// in a JSON file made for one configuration and one set of networks (their
// digests must match the run's for the file to be used), named values
// beside the rows (e.g. reference levels every row shares), shards that
// split the rows between runs side by side, and a lock that keeps two
// runs off one file.
//
// A folder holds, for a stem S (e.g. "density-quick"), S.json and the
// shards' files S.shard-k-of-n.json. A run writes only its own file and
// reads all of them; a file made for other settings or networks, or
// malformed, is an error (ErrWork), never silently replaced.
package workstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/internal/worklock"
)

// ErrWork is wrapped by every error about a work folder whose files are
// malformed, were made for other settings or networks, or are in use by
// another run: bad input, not a failure of the experiment.
var ErrWork = errors.New("unusable work file")

// MaxFile bounds the size of a work file read back.
const MaxFile = 256 << 20

// Machine describes this computer in a few words (recorded with the work
// it computed).
func Machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

// CheckDir checks, before any work, that dir is a folder this process can
// write (it is made when missing), so that a run of hours does not fail at
// its first save. who prefixes the messages.
func CheckDir(who, dir string) error {
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

// Lock keeps two runs off the work named name in dir (what names it in
// messages): it takes the lock .<name>.lock there (worklock) for the run,
// which Releases it when done. Another run holding it, or a lock that
// cannot be taken, is an ErrWork, said at once; where files cannot be
// locked (a platform without flock, a filesystem that refuses it) the run
// goes on unlocked, saying so on log. dir "" keeps no work and takes no
// lock (a nil Lock, whose Release is a no-op).
func Lock(who, dir, name, what string, log io.Writer) (*worklock.Lock, error) {
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

// Probe says, before a run starts, whether Lock would refuse it (another
// run holds the lock); the run itself takes the lock.
func Probe(who, dir, name, what string) error {
	l, err := Lock(who, dir, name, what, nil)
	if err != nil {
		return err
	}
	return l.Release()
}

// ReadStrict decodes the JSON file path into v, refusing unknown fields,
// trailing data and files over MaxFile; found is false when there is no
// such file. who prefixes the messages.
func ReadStrict(who, path string, v any) (found bool, err error) {
	raw, err := input.ReadAll(path, MaxFile) // a regular file, its size checked before it is read
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s: work file %v: %w", who, err, ErrWork)
	}
	if err := DecodeStrict(raw, v); err != nil {
		return true, fmt.Errorf("%s: %s: %v: %w", who, path, err, ErrWork)
	}
	return true, nil
}

// DecodeStrict decodes raw into v, refusing unknown fields and trailing
// data.
func DecodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
