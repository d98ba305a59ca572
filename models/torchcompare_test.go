package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// BenchmarkScoreNetGradAll fills the one number BenchmarkScoreNet does not
// give for the PyTorch comparison (scripts/bench-torch.sh): the gradient of
// ⟨ε̂, ε̂⟩ = ReduceAllSum(Square(Eps)) w.r.t. the input x AND every trainable
// weight, with the fast VJPs, on the same cases, backend, context and inputs
// (x₀, α, σ of one training batch) as BenchmarkScoreNet's grad-x mode. It is
// the backward pass of a training step without the loss, clipping, Adam and
// EMA around it. It also reports the number of trainable weights ("params").
func BenchmarkScoreNetGradAll(b *testing.B) {
	for _, c := range []struct{ d, width, batch int }{{2, 128, 1024}, {64, 256, 256}, {784, 256, 128}} {
		b.Run(fmt.Sprintf("d=%d/w=%d/B=%d/grad-all/fast", c.d, c.width, c.batch), func(b *testing.B) {
			data := make([][]float64, 512)
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range data {
				data[i] = make([]float64, c.d)
				for j := range data[i] {
					data[i][j] = rng.NormFloat64()
				}
			}
			ctx := NewStore()
			ctx.SetParams(map[string]any{ParamWidth: c.width, ParamBatchSize: c.batch})
			tr, err := NewTrainer(MustNewTrainBackend(), ctx, schedule.DefaultVP(), DSM, data, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tr.TrainSteps(1); err != nil { // creates and initialises the variables
				b.Fatal(err)
			}
			batch := tr.batch()
			args := []any{batch[0], batch[2], batch[3]}
			nParams := 0 // trainable weights in the gradient, reported to check the PyTorch twin's size
			e := model.MustNewExec(tr.Backend, tr.Store, func(ctx *model.Scope, in []*graph.Node) []*graph.Node {
				eps := Eps(ctx, Inputs{X: in[0], Alpha: in[1], Sigma: in[2]})
				g := in[0].Graph()
				wrt := []*graph.Node{in[0]}
				for v := range ctx.IterVariables() {
					if v.Trainable && v.InUseByGraph(g) {
						wrt = append(wrt, v.NodeValue(g))
						nParams += v.Shape().Size()
					}
				}
				return graph.Gradient(graph.ReduceAllSum(graph.Square(eps)), wrt...)
			})
			run := func() {
				for _, t := range e.MustExec(args...) {
					t.MustFinalizeAll()
				}
			}
			run() // compile outside the loop
			for b.Loop() {
				run()
			}
			b.ReportMetric(float64(nParams), "params")
		})
	}
}
