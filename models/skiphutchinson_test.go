package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// TestSkipHutchinsonIsTheControlVariate: on a float64 patch-skip network
// with random weights, SkipHutchinsonTrace's estimate equals that of
// SkipControlVariate (the same probes, their VJPs through the skip in the
// graph) to 1e-9 relative, at small and large t, for K = 1, 3 and 12 (a
// forward pass shared by 1, 3 and 6 probes), in one call and in calls of
// a few rows; its ε equals the network's; and access.NetModel takes both
// from it. Leaving the skip's Fisher out of the probes' u, or taking a
// point's probes from the wrong rows of the mixture's products, fails it.
func TestSkipHutchinsonIsTheControlVariate(t *testing.T) {
	net, sched, x2 := patchSkipNetwork(t, 2)
	_, d := x2.Dims()
	rng := rand.New(rand.NewPCG(9, 10))
	x := mat.NewDense(5, d, nil)
	for i := range 5 {
		for j := range d {
			x.Set(i, j, x2.At(i%2, j)+0.2*rng.NormFloat64())
		}
	}
	for _, k := range []int{1, 3, 12} {
		ref, _, err := SkipControlVariate(net.Backend, net.Store, sched, net.DType, k, 7)
		if err != nil {
			t.Fatal(err)
		}
		est, err := NewSkipHutchinson(net, k, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []float64{0.02, 0.3, 0.9} {
			c, _ := schedule.At(sched, tt)
			want, err := ref.Trace(c, x)
			if err != nil {
				t.Fatal(err)
			}
			known, _ := ref.Known.Trace(c, x)
			wantEps, err := net.EpsAt(c, x)
			if err != nil {
				t.Fatal(err)
			}
			for _, rows := range []int{0, 2 * k} { // every point in one call; two a call
				if rows > 0 {
					est.SetMaxRows(rows)
				}
				m := access.NetModel{Net: net, Trace: est}
				ev, err := m.Eval(c, x, score.WantEps|score.WantTrace)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Abs(ev.Trace[i]-want[i]) > 1e-9*math.Abs(want[i]) {
						t.Errorf("K=%d t=%g rows %d: point %d: trace %.12g, through the skip %.12g (skip alone %.6g)", k, tt, rows, i, ev.Trace[i], want[i], known[i])
					}
					if math.Abs(want[i]-known[i]) < 1e-4*math.Abs(want[i]) {
						t.Errorf("K=%d t=%g: point %d: the residual's probes add nothing (%g): the test cannot see them", k, tt, i, want[i]-known[i])
					}
					for j := range d {
						if e := math.Abs(ev.Eps.At(i, j) - wantEps.At(i, j)); e > 1e-10*(1+math.Abs(wantEps.At(i, j))) {
							t.Fatalf("K=%d t=%g: ε[%d, %d] = %g, the network's %g", k, tt, i, j, ev.Eps.At(i, j), wantEps.At(i, j))
						}
					}
				}
			}
			est.SetMaxRows(access.DefaultMaxRows)
		}
	}
}

// TestPatchQuadsAreTheGradients: patchQuadsGraph (the patch network's
// backward passes written out, FiLM folded into the weights) gives the
// residual and the quadratic forms residualQuadsGraph takes by
// graph.Gradient, to 1e-10 in float64, for one and two blocks, either
// weight layout, and 1 and 3 probes a row at small and large t. A wrong
// LayerNorm gradient (its mean(ḡ ⊙ x̂) term left out), a FiLM shift folded
// without its weights, or c_in left off the probes' windows fails it.
func TestPatchQuadsAreTheGradients(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
	}{
		{"one block, in-out", nil},
		{"two blocks, out-in", map[string]any{ParamDepth: 2, ParamWeightLayout: LayoutOutIn}},
	} {
		net, sched, x2 := patchSkipNetworkWith(t, 2, tc.params)
		if !handWrittenQuads(net.Store.RootScope()) {
			t.Fatalf("%s: the patch network is not written out", tc.name)
		}
		_, d := x2.Dims()
		rng := rand.New(rand.NewPCG(3, 4))
		random := func(r int) *mat.Dense {
			m := mat.NewDense(r, d, nil)
			for i := range r {
				for j := range d {
					m.Set(i, j, x2.At(i%2, j)+0.5*rng.NormFloat64())
				}
			}
			return m
		}
		want := model.MustNewExec(net.Backend, net.Store, residualQuadsGraph)
		got := model.MustNewExec(net.Backend, net.Store, patchQuadsGraph)
		for _, g := range []int{1, 3} {
			x, y, v, u := random(4), random(4), random(4*g), random(4*g)
			for _, tt := range []float64{0.02, 0.7} {
				c, _ := schedule.At(sched, tt)
				args := []any{tensormat.FromMatrix(net.DType, x), tensormat.FromMatrix(net.DType, y),
					tensormat.FromMatrix(net.DType, v), tensormat.FromMatrix(net.DType, u),
					tensormat.Filled(net.DType, 1, c.Alpha), tensormat.Filled(net.DType, 1, c.Sigma)}
				w, o := want.MustExec(args...), got.MustExec(args...)
				for k, what := range []string{"residual", "quadratic forms"} {
					wv, ov := tensormat.Values(w[k]), tensormat.Values(o[k])
					var scale float64
					for _, a := range wv {
						scale = max(scale, math.Abs(a))
					}
					if scale == 0 {
						t.Fatalf("%s: the %s are zero: the test cannot see them", tc.name, what)
					}
					for i := range wv {
						if math.Abs(ov[i]-wv[i]) > 1e-10*scale {
							t.Fatalf("%s, %d probes, t=%g: %s[%d] = %.12g, by graph.Gradient %.12g", tc.name, g, tt, what, i, ov[i], wv[i])
						}
					}
				}
			}
		}
	}
}
