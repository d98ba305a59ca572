package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
)

// BenchmarkMixtureSkip times ε_mix at image scale: d = 784, K components
// of rank r, float32, Go backend, batch 1 and 128.
func BenchmarkMixtureSkip(b *testing.B) {
	const d = 784
	for _, kr := range [][2]int{{50, 32}, {100, 32}, {100, 64}} {
		k, r := kr[0], kr[1]
		rng := rand.New(rand.NewPCG(1, 2))
		comps := make([]mixture.Component, k)
		labels := make([]int, k)
		for c := 0; c < k; c++ {
			mean := make([]float64, d)
			for j := range mean {
				mean[j] = rng.Float64() - 0.5
			}
			q := mat.NewDense(d, r, nil)
			for j := 0; j < r; j++ {
				q.Set(j, j, 1)
			}
			lam := make([]float64, r)
			for j := range lam {
				lam[j] = 0.1 / float64(j+1)
			}
			comps[c] = mixture.Component{Mean: mean, Basis: q, Lambda: lam, Rest: 1e-3, Idle: []int{d - 2, d - 1}, IdleVar: 5e-6, Weight: 1}
			labels[c] = c % 10
		}
		g, err := mixture.NewLowRank(comps)
		if err != nil {
			b.Fatal(err)
		}
		_ = g.SetClasses(labels)
		for _, bs := range []int{1, 128} {
			store := NewStore()
			store.SetParams(map[string]any{ParamNumClasses: 10})
			if err := SetMixtureSkip(store, g); err != nil {
				b.Fatal(err)
			}
			backend := MustNewBackend()
			e := model.MustNewExec(backend, store, func(sc *model.Scope, x, a, s *graph.Node, c *graph.Node) *graph.Node {
				return MixtureEps(sc, Inputs{X: x, Alpha: a, Sigma: s, Class: c})
			})
			x := make([][]float32, bs)
			al, sg := make([]float32, bs), make([]float32, bs)
			cl := make([]int32, bs)
			for i := range x {
				x[i] = make([]float32, d)
				for j := range x[i] {
					x[i][j] = float32(rng.NormFloat64())
				}
				al[i], sg[i], cl[i] = 0.8, 0.6, int32(i%11)
			}
			b.Run(fmt.Sprintf("K=%d,r=%d/B=%d", k, r, bs), func(b *testing.B) {
				for b.Loop() {
					out := e.MustExec1(x, al, sg, cl)
					out.FinalizeAll()
				}
			})
		}
	}
}
