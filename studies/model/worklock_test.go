package model

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/dfx-lab/dfx/internal/workstore/locktest"
	"github.com/dfx-lab/dfx/mnist"
)

// TestSecondModelEvalOnOneWorkFolderIsRefused: while a run holds a work
// folder's lock (held here by workstore.Lock, as a run takes it), the model
// evaluation on that folder, and the check made before a run
// (CheckModelWork), are refused with ErrWork naming the holder, before any
// work; the run gives its lock back when it returns. The context is
// cancelled, so that a run that ignored the lock would end at once with
// context.Canceled instead.
func TestSecondModelEvalOnOneWorkFolderIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the committed networks")
	}
	locktest.SkipUnlessLockable(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	me := ModelEvalQuick()
	me.Work = t.TempDir()
	held := locktest.Hold(t, me.Work, modelWorkLock)
	locktest.Refused(t, "CheckModelWork", CheckModelWork(me))
	_, err := RunModelEval(ctx, mnist.Problem(), mnist.Lab{}, me, io.Discard)
	locktest.Refused(t, "mnist-model", err)
	held.Release()
	if err := CheckModelWork(me); err != nil {
		t.Errorf("CheckModelWork of a free folder: %v", err)
	}
	if _, err := RunModelEval(ctx, mnist.Problem(), mnist.Lab{}, me, io.Discard); errors.Is(err, ErrWork) {
		t.Errorf("mnist-model after the lock was released: %v", err)
	}
	locktest.Released(t, "mnist-model", me.Work, modelWorkLock)
}
