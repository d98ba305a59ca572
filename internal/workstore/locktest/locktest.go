// Package locktest holds the checks that every test of a run with a work
// folder makes about its lock (internal/workstore.Lock): a second run is
// refused while the lock is held, and a run gives its lock back when it
// returns. Tests of mnist training, mnist-model and mnist-density use it.
package locktest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/internal/worklock"
	"github.com/dfx-lab/dfx/internal/workstore"
)

// SkipUnlessLockable skips t where files cannot be locked.
func SkipUnlessLockable(t testing.TB) {
	t.Helper()
	if !worklock.Supported {
		t.Skip("files cannot be locked on this platform")
	}
}

// Hold takes the lock of the work file name in dir, as a run takes it.
func Hold(t testing.TB, dir, name string) *worklock.Lock {
	t.Helper()
	l, err := workstore.Lock("test", dir, name, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Refused checks that err is the refusal of a run whose work file another
// run holds: workstore.ErrWork, naming the holder.
func Refused(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, workstore.ErrWork) || !strings.Contains(err.Error(), "in use by process") {
		t.Errorf("%s while another run holds its work file: %v, want ErrWork naming the holder", what, err)
	}
}

// Released checks that the run what gave back the lock of the work file
// name in dir: its lock file is gone (a lock lost to the garbage
// collector's closing of its file would leave it), and the lock can be
// taken again.
func Released(t testing.TB, what, dir, name string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "."+name+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s did not Release its lock: its lock file is there (%v)", what, err)
	}
	l, err := workstore.Lock("test", dir, name, name, nil)
	if err != nil {
		t.Errorf("%s kept its lock after it returned: %v", what, err)
		return
	}
	l.Release()
}
