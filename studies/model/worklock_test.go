package model

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/internal/worklock"
	"github.com/dfx-lab/dfx/internal/workstore"
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
	me := ModelEvalQuick()
	me.Work = t.TempDir()
	held, err := workstore.Lock("test", me.Work, modelWorkLock, modelWorkLock, nil)
	if err != nil {
		t.Fatal(err)
	}
	refused("CheckModelWork", CheckModelWork(me.Work))
	_, err = RunModelEval(ctx, mnist.Problem(), mnist.Lab{}, me, io.Discard)
	refused("mnist-model", err)
	held.Release()
	if err := CheckModelWork(me.Work); err != nil {
		t.Errorf("CheckModelWork of a free folder: %v", err)
	}
	if _, err := RunModelEval(ctx, mnist.Problem(), mnist.Lab{}, me, io.Discard); errors.Is(err, ErrWork) {
		t.Errorf("mnist-model after the lock was released: %v", err)
	}
	// Release removes the lock file; a lock lost to the garbage collector's
	// closing of its file would leave it.
	if _, err := os.Stat(filepath.Join(me.Work, "."+modelWorkLock+".lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mnist-model did not Release its lock: its lock file is there (%v)", err)
	}
	l, err := workstore.Lock("test", me.Work, modelWorkLock, modelWorkLock, nil)
	if err != nil {
		t.Errorf("mnist-model kept its lock after it returned: %v", err)
	}
	l.Release()
}
