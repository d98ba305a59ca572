package mnist

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/internal/worklock"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/models"
)

// TestSecondRunOnOneWorkFileIsRefused: while a run holds a work file's
// lock (held here by workstore.Lock, as a run takes it), training on that file
// is refused with ErrWork naming the holder, before any work, and so is the
// check made before a run (CheckTrainFree); each run gives its lock back
// when it returns. Contexts are cancelled, so that a run that ignored the
// lock would end at once with context.Canceled instead.
func TestSecondRunOnOneWorkFileIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the committed networks")
	}
	if !worklock.Supported {
		t.Skip("files cannot be locked on this platform")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), "in use by process") {
			t.Errorf("%s while another run holds its work file: %v, want ErrWork naming the holder", what, err)
		}
	}
	lock := func(dir, name string) *worklock.Lock {
		t.Helper()
		l, err := workstore.Lock("test", dir, name, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	released := func(what, dir, name string) { // the run gave its lock back
		t.Helper()
		// Release removes the lock file; a lock lost to the garbage
		// collector's closing of its file would leave it.
		if _, err := os.Stat(filepath.Join(dir, "."+name+".lock")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s did not Release its lock: its lock file is there (%v)", what, err)
		}
		l, err := workstore.Lock("test", dir, name, name, nil)
		if err != nil {
			t.Errorf("%s kept its lock after it returned: %v", what, err)
		}
		l.Release()
	}

	spec, err := SpecByName("classifier")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	state := filepath.Base(statePath(out, spec.Name))
	held := lock(out, state)
	refused("CheckTrainFree", CheckTrainFree(out, spec.Name))
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	_, err = TrainNetwork(ctx, backend, spec, TrainOptions{Out: out, Steps: 1})
	refused("train", err)
	held.Release()
	if err := CheckTrainFree(out, spec.Name); err != nil {
		t.Errorf("CheckTrainFree of a free folder: %v", err)
	}
	if _, err := TrainNetwork(ctx, backend, spec, TrainOptions{Out: out, Steps: 1}); errors.Is(err, ErrWork) {
		t.Errorf("train after the lock was released: %v", err)
	}
	released("train", out, state)
}
