package mnist

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/dfx-lab/dfx/internal/workstore/locktest"
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
	locktest.SkipUnlessLockable(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	spec, err := SpecByName("classifier")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	state := filepath.Base(statePath(out, spec.Name))
	held := locktest.Hold(t, out, state)
	locktest.Refused(t, "CheckTrainFree", CheckTrainFree(out, spec.Name))
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	_, err = TrainNetwork(ctx, backend, spec, TrainOptions{Out: out, Steps: 1})
	locktest.Refused(t, "train", err)
	held.Release()
	if err := CheckTrainFree(out, spec.Name); err != nil {
		t.Errorf("CheckTrainFree of a free folder: %v", err)
	}
	if _, err := TrainNetwork(ctx, backend, spec, TrainOptions{Out: out, Steps: 1}); errors.Is(err, ErrWork) {
		t.Errorf("train after the lock was released: %v", err)
	}
	locktest.Released(t, "train", out, state)
}
