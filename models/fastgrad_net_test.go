package models

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/dfx-lab/dfx/models/fastgrad"
)

// TestNetworkGradientsEqualWithFastAndOriginalVJPs builds the class-
// conditional residual MLP in float64 and checks that its gradients w.r.t.
// the input and every weight are the same with fastgrad's VJPs and GoMLX's.
func TestNetworkGradientsEqualWithFastAndOriginalVJPs(t *testing.T) {
	defer fastgrad.Install()
	ctx := tinyContext()
	ctx.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 3, ParamDepth: 2})
	if err := ctx.SetRNGStateFromSeed(3); err != nil {
		t.Fatal(err)
	}
	backend := MustNewBackend()
	x := [][]float64{{0.3, -1.1}, {2.0, 0.4}, {-0.5, 0.9}}
	alpha, sigma, class := []float64{0.9, 0.5, 0.99}, []float64{0.4, 0.8, 0.1}, []int32{0, 3, 2}
	grads := func() [][]float64 {
		outs := context.MustExecOnceN(backend, ctx.Reuse().Checked(false), func(ctx *context.Context, in []*graph.Node) []*graph.Node {
			eps := Eps(ctx, Inputs{X: in[0], Alpha: in[1], Sigma: in[2], Class: in[3]})
			loss := graph.ReduceAllSum(graph.Mul(eps, graph.Sin(in[0])))
			var wrt []*graph.Node
			wrt = append(wrt, in[0])
			for v := range ctx.IterVariables() {
				if v.Trainable && v.InUseByGraph(in[0].Graph()) {
					wrt = append(wrt, v.ValueGraph(in[0].Graph()))
				}
			}
			return graph.Gradient(loss, wrt...)
		}, x, alpha, sigma, class)
		var flat [][]float64
		for _, o := range outs {
			flat = append(flat, tensors.MustCopyFlatData[float64](o))
		}
		return flat
	}
	fastgrad.Install()
	fast := grads()
	fastgrad.Uninstall()
	orig := grads()
	if len(fast) != len(orig) || len(fast) < 10 {
		t.Fatalf("%d vs %d gradients", len(fast), len(orig))
	}
	for i := range fast {
		for j := range fast[i] {
			if d := math.Abs(fast[i][j] - orig[i][j]); d > 1e-12*(1+math.Abs(orig[i][j])) {
				t.Fatalf("gradient %d element %d: fast %g, original %g", i, j, fast[i][j], orig[i][j])
			}
		}
	}
}
