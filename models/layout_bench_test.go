package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// BenchmarkWeightLayout compares the two Dense weight layouts
// (ParamWeightLayout) on the MNIST ε-network (width 512 × 3, 10 classes,
// EDM): the forward pass at batch 1, 16, 64 and 128, and the train step at
// batch 128, each layout in turn (figures/bench/layout.txt:
// go test -run '^$' -bench BenchmarkWeightLayout -benchtime 2s ./models/).
func BenchmarkWeightLayout(b *testing.B) {
	store := func(layout string, batch int) *model.Store {
		s := NewStore()
		s.SetParams(map[string]any{ParamWidth: 512, ParamDepth: 3, ParamNumClasses: 10, ParamParam: "edm",
			ParamWeightLayout: layout, ParamBatchSize: batch})
		return s
	}
	for _, batch := range []int{1, 16, 64, 128} {
		for _, layout := range []string{LayoutInOut, LayoutOutIn} {
			b.Run(fmt.Sprintf("forward/B=%d/%s", batch, layout), func(b *testing.B) {
				x := make([]float32, batch*784)
				for i := range x {
					x[i] = float32(i%13)*0.1 - 0.6
				}
				a, s, c := make([]float32, batch), make([]float32, batch), make([]int32, batch)
				for i := range a {
					a[i], s[i], c[i] = 0.6, 0.8, int32(i%10)
				}
				e := model.MustNewExec(MustNewBackend(), store(layout, batch), func(scope *model.Scope, xn, an, sn, cn *graph.Node) *graph.Node {
					return Eps(scope, Inputs{X: xn, Alpha: an, Sigma: sn, Class: cn})
				})
				xt := tensors.FromFlatDataAndDimensions(x, batch, 784)
				e.MustExec(xt, a, s, c)[0].MustFinalizeAll()
				for b.Loop() {
					e.MustExec(xt, a, s, c)[0].MustFinalizeAll()
				}
			})
		}
	}
	for _, layout := range []string{LayoutInOut, LayoutOutIn} {
		b.Run(fmt.Sprintf("train-step/B=128/%s", layout), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			data, labels := make([][]float64, 256), make([]int, 256)
			for i := range data {
				data[i] = make([]float64, 784)
				for j := range data[i] {
					data[i][j] = rng.NormFloat64()
				}
				labels[i] = i % 10
			}
			tr, err := NewTrainer(MustNewTrainBackend(), store(layout, 128), schedule.DefaultVP(), DSM, data, labels)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tr.TrainSteps(1); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := tr.TrainSteps(1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
