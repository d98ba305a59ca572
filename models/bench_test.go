package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// BenchmarkScoreNet times, on the backend NewTrainBackend gives, one forward
// pass of the residual-MLP score network, its gradient w.r.t. the input, and
// one full training step (DSM loss, gradients, clipping, Adam, EMA) at the
// same batch size. The last config is the MNIST-scale network (width 1024 ×
// 4 blocks, batch 128). Claims (GOEXPERIMENT=simd, GoMLX's own VJPs):
// grad-x ≤ 3× forward, train-step ≤ 4× forward.
func BenchmarkScoreNet(b *testing.B) {
	for _, c := range []struct{ d, width, depth, batch int }{{2, 128, 3, 1024}, {64, 256, 3, 256}, {784, 256, 3, 128}, {784, 1024, 4, 128}} {
		data := make([][]float64, 512)
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range data {
			data[i] = make([]float64, c.d)
			for j := range data[i] {
				data[i][j] = rng.NormFloat64()
			}
		}
		name := fmt.Sprintf("d=%d/w=%dx%d/B=%d", c.d, c.width, c.depth, c.batch)
		setup := func() (*Trainer, []any) {
			store := NewStore()
			store.SetParams(map[string]any{ParamWidth: c.width, ParamDepth: c.depth, ParamBatchSize: c.batch})
			tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, data, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tr.TrainSteps(1); err != nil {
				b.Fatal(err)
			}
			args := tr.batch()
			return tr, []any{args[0], args[2], args[3]}
		}
		for _, mode := range []string{"forward", "grad-x", "train-step"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				tr, args := setup()
				var run func()
				if mode == "train-step" {
					run = func() {
						if _, err := tr.TrainSteps(1); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					e := model.MustNewExec(tr.Backend, tr.Store, func(scope *model.Scope, in []*graph.Node) *graph.Node {
						eps := Eps(scope, Inputs{X: in[0], Alpha: in[1], Sigma: in[2]})
						if mode == "forward" {
							return eps
						}
						return graph.Gradient(graph.ReduceAllSum(graph.Square(eps)), in[0])[0]
					})
					run = func() { e.MustCall(args...)[0].MustFinalizeAll() }
				}
				run()
				for b.Loop() {
					run()
				}
			})
		}
	}
}
