package ot

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models/onnximport/onnxtest"
)

// The OT test runs on an imported network: on the PyTorch MLP fixture
// (untrained, imported on the VP schedule) the Jacobian rule carries the
// network's own F_θ = (1/σ) ∂ε̂/∂x, which is not symmetric, and A is the
// derivative of the computed map x_T → x_s (central differences agree),
// for DDIM and RK4; the map of a network that is no gradient field is not
// OT (A is not symmetric).
func TestOTOnAnImportedNetwork(t *testing.T) {
	im := onnxtest.MLP(t, schedule.DefaultVP())
	net := onnxtest.Net(t, im)
	op, err := access.NewOperator("vjp", access.Env{Net: net})
	if err != nil {
		t.Fatal(err)
	}
	src := schedule.Continuous{Schedule: im.Schedule}
	grid, err := Grid(src, "uniform", 0.05, 10)
	if err != nil {
		t.Fatal(err)
	}
	x0 := StartStates(2, 8, 1, 3)
	delta := StartStates(2, 8, 1, 4)
	for _, solver := range []Solver{DDIM, RK4} {
		sp := Spec{Model: access.NetModel{Net: net, Fisher: op}, Schedule: src, Grid: grid, Solver: solver, X0: x0}
		out, err := Test(context.Background(), sp)
		if err != nil {
			t.Fatalf("%v: %v", solver, err)
		}
		const h = 1e-3
		end := func(sign float64) *mat.Dense {
			x := mat.DenseCopyOf(x0)
			x.Apply(func(i, j int, v float64) float64 { return v + sign*h*delta.At(i, j) }, x)
			sp.X0, sp.Rules = x, []Rule{}
			o, err := Test(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			return o.Chains.X
		}
		plus, minus := end(1), end(-1)
		for k := range 2 {
			var fd, got mat.VecDense
			fd.SubVec(plus.RowView(k), minus.RowView(k))
			fd.ScaleVec(1/(2*h), &fd)
			got.MulVec(out.Chains.A[0][k], delta.RowView(k))
			var diff mat.VecDense
			diff.SubVec(&got, &fd)
			if e := mat.Norm(&diff, 2) / mat.Norm(&fd, 2); e > 1e-2 {
				t.Errorf("%v, chain %d: ‖A δ − central difference‖/‖central difference‖ = %.3g", solver, k, e)
			}
			t.Logf("%v, chain %d: asymmetry of A %.3g", solver, k, Asymmetry(out.Chains.A[0][k]))
		}
		if s, _ := out.Of(Jacobian); s.Asym.Mean < 1e-3 {
			t.Errorf("%v: the map of an untrained network has a symmetric Jacobian (asymmetry %.3g)?", solver, s.Asym.Mean)
		}
	}
}
