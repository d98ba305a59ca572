package mnist

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/models"
)

// TestSecondRunOnOneWorkFileIsRefused: while a run holds a work file's
// lock (held here by lockWork, as a run takes it), the density experiment,
// the model evaluation and training on that file are refused with ErrWork
// before any work; a shard's own file is another lock; a released lock is
// free again. Contexts are cancelled, so that a run that ignored the lock
// would end at once with context.Canceled instead.
func TestSecondRunOnOneWorkFileIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the committed networks")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), "in use by process") {
			t.Errorf("%s while another run holds its work file: %v, want ErrWork naming the holder", what, err)
		}
	}

	work := t.TempDir()
	cfg := DensityExpQuick("")
	cfg.Work = work
	held, err := lockWork("test", work, densityWorkFile(cfg.Profile))
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunDensityExp(ctx, cfg, io.Discard)
	refused("mnist-density", err)
	shard := cfg
	shard.Shard, shard.Shards = 1, 2
	if _, err := RunDensityExp(ctx, shard, io.Discard); errors.Is(err, ErrWork) {
		t.Errorf("a shard, whose file is its own, refused: %v", err)
	}
	held.Release()
	if _, err := RunDensityExp(ctx, cfg, io.Discard); errors.Is(err, ErrWork) {
		t.Errorf("mnist-density after the lock was released: %v", err)
	}

	me := ModelEvalQuick("", "eps")
	me.Work = t.TempDir()
	held, err = lockWork("test", me.Work, "mnist-model")
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunModelEval(ctx, me, io.Discard)
	refused("mnist-model", err)
	held.Release()

	spec, err := SpecByName("classifier")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	held, err = lockWork("test", out, "_classifier.state.dfxckpt")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	_, err = TrainNetwork(ctx, backend, spec, TrainOptions{Out: out, Steps: 1})
	refused("train", err)
}
