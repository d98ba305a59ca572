package ot

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// sqrtSym returns S^{p} for a symmetric positive definite S.
func powSym(s *mat.SymDense, p float64) *mat.Dense {
	var e mat.EigenSym
	if !e.Factorize(s, true) {
		panic("eigen")
	}
	var u mat.Dense
	e.VectorsTo(&u)
	vals := e.Values(nil)
	n := len(vals)
	d := mat.NewDense(n, n, nil)
	for i, v := range vals {
		d.Set(i, i, math.Pow(v, p))
	}
	var out mat.Dense
	out.Product(&u, d, u.T())
	return &out
}

// For q_0 = N(μ, Σ) the PF-ODE map is linear in closed form:
// x_s = α_s μ + C_s^{½} C_T^{−½} (x_T − α_T μ), C_t = α_t² Σ + σ_t² I,
// so Φ = C_s^{½} C_T^{−½}. RK4 must reproduce it.
func TestSingleGaussianJacobianMatchesClosedFormFlow(t *testing.T) {
	cov := GaussianCov()
	g, err := SingleGaussian([]float64{0.5, 0.5}, cov)
	if err != nil {
		t.Fatal(err)
	}
	for _, sched := range []string{"ve", "vp", "subvp", "edm"} {
		p := mustSchedule(t, sched)
		kind := "logsigma"
		if sched == "vp" || sched == "subvp" {
			kind = "uniform"
		}
		grid, err := Grid(p, kind, 0.1, 400)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Test(context.Background(), Spec{Data: g, Schedule: p, Grid: grid, Solver: RK4, Chains: 3, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		c := func(tt float64) *mat.SymDense {
			n, _ := p.At(tt)
			m := mat.NewSymDense(2, nil)
			m.ScaleSym(n.Alpha*n.Alpha, cov)
			m.SetSym(0, 0, m.At(0, 0)+n.Sigma*n.Sigma)
			m.SetSym(1, 1, m.At(1, 1)+n.Sigma*n.Sigma)
			return m
		}
		var want mat.Dense
		want.Mul(powSym(c(grid[len(grid)-1]), 0.5), powSym(c(grid[0]), -0.5))
		for k, a := range out.Chains.A[0] {
			if e := relErr(a, &want); e > 1e-6 {
				t.Errorf("%s chain %d: Φ differs from the closed form by %.3g\n%v\n%v", sched, k, e, mat.Formatted(a), mat.Formatted(&want))
			}
		}
	}
}
