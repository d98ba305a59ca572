package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models/fastgrad"
)

// BenchmarkScoreNet compares, on the pure-Go backend, one forward pass of the
// residual-MLP score network, its gradient w.r.t. the input, and one full
// training step (DSM loss, gradients, clipping, Adam, EMA) at the same batch
// size, with the fast VJPs and with GoMLX's original ones.
// Claims: grad-x ≤ 3× forward, train-step ≤ 4× forward (fast VJPs).
func BenchmarkScoreNet(b *testing.B) {
	defer fastgrad.Install()
	for _, c := range []struct{ d, width, batch int }{{2, 128, 1024}, {64, 256, 256}, {784, 256, 128}} {
		data := make([][]float64, 512)
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range data {
			data[i] = make([]float64, c.d)
			for j := range data[i] {
				data[i][j] = rng.NormFloat64()
			}
		}
		for _, vjp := range []string{"fast", "original"} {
			name := fmt.Sprintf("d=%d/w=%d/B=%d", c.d, c.width, c.batch)
			setup := func() (*Trainer, []any) {
				if vjp == "fast" {
					fastgrad.Install()
				} else {
					fastgrad.Uninstall()
				}
				ctx := NewContext()
				ctx.SetParams(map[string]any{ParamWidth: c.width, ParamBatchSize: c.batch})
				tr, err := NewTrainer(MustNewTrainBackend(), ctx, schedule.DefaultVP(), DSM, data, nil)
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
				if vjp == "original" && mode == "forward" {
					continue
				}
				b.Run(name+"/"+mode+"/"+vjp, func(b *testing.B) {
					tr, args := setup()
					var run func()
					if mode == "train-step" {
						run = func() {
							if _, err := tr.TrainSteps(1); err != nil {
								b.Fatal(err)
							}
						}
					} else {
						e := context.MustNewExec(tr.Backend, tr.Ctx.Reuse().Checked(false), func(ctx *context.Context, in []*graph.Node) *graph.Node {
							eps := Eps(ctx, Inputs{X: in[0], Alpha: in[1], Sigma: in[2]})
							if mode == "forward" {
								return eps
							}
							return graph.Gradient(graph.ReduceAllSum(graph.Square(eps)), in[0])[0]
						})
						run = func() { e.MustExec(args...)[0].MustFinalizeAll() }
					}
					run()
					for b.Loop() {
						run()
					}
				})
			}
		}
	}
}
