package models

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/testwait"
)

// TestResidualMLPForwardAndTrainStepFinishUnderADeadline is the regression
// test of the Go backend's op-scheduler deadlock (backendconfig.go): the
// MNIST-scale residual MLP (d = 784, width 1024 × 4 blocks, batch 128), the
// network that hung GoMLX v0.28.8's default parallel scheduler on 2 cores,
// runs 20 forwards and 2 training steps with the library's configuration,
// each run under a deadline.
func TestResidualMLPForwardAndTrainStepFinishUnderADeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("MNIST-scale network")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	data := make([][]float64, 256)
	for i := range data {
		data[i] = make([]float64, 784)
		for j := range data[i] {
			data[i][j] = rng.Float64()*2 - 1
		}
	}
	store := NewStore()
	store.SetParams(map[string]any{ParamWidth: 1024, ParamDepth: 4, ParamBatchSize: 128})
	tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A deadlock never ends; a slow run on a loaded machine does: the limit is
	// generous (testwait.Limit).
	within := func(what string, f func()) {
		t.Helper()
		limit := testwait.Limit(t)
		start := time.Now()
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(limit):
			config := TrainBackendConfig
			if env := os.Getenv("GOMLX_BACKEND"); env != "" {
				config = env + " (GOMLX_BACKEND)"
			}
			t.Fatalf("waited %s for %s to finish: the backend's scheduler is deadlocked (config %s), or the machine is very loaded (DFX_TEST_WAIT)",
				time.Since(start).Round(time.Second), what, config)
		}
	}
	within("2 training steps", func() {
		if _, err := tr.TrainSteps(2); err != nil {
			t.Error(err)
		}
	})
	args := tr.batch()
	e := model.MustNewExec(tr.Backend, tr.Store, func(scope *model.Scope, in []*graph.Node) *graph.Node {
		return Eps(scope, Inputs{X: in[0], Alpha: in[1], Sigma: in[2]})
	})
	within("20 forwards", func() {
		for range 20 {
			e.MustCall(args[0], args[2], args[3])[0].MustFinalizeAll()
		}
	})
}
