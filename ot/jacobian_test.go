package ot

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"gonum.org/v1/gonum/mat"
)

// endStates runs the map x_T ↦ x_s of in on the given starts.
func endStates(t *testing.T, in Integration, x0 *mat.Dense) *mat.Dense {
	t.Helper()
	in.Rules = nil
	ch, err := in.Run(context.Background(), x0)
	if err != nil {
		t.Fatal(err)
	}
	return ch.X
}

// fdJacobian is the central finite-difference Jacobian of the computed map at
// every row of x0, all perturbations batched as chains.
func fdJacobian(t *testing.T, in Integration, x0 *mat.Dense, h float64) []*mat.Dense {
	k, d := x0.Dims()
	pert := mat.NewDense(2*k*d, d, nil)
	for c := 0; c < k; c++ {
		for j := 0; j < d; j++ {
			for s, sign := range []float64{1, -1} {
				row := (c*d+j)*2 + s
				pert.SetRow(row, x0.RawRowView(c))
				pert.Set(row, j, x0.At(c, j)+sign*h)
			}
		}
	}
	xs := endStates(t, in, pert)
	out := make([]*mat.Dense, k)
	for c := 0; c < k; c++ {
		a := mat.NewDense(d, d, nil)
		for j := 0; j < d; j++ {
			for i := 0; i < d; i++ {
				a.Set(i, j, (xs.At((c*d+j)*2, i)-xs.At((c*d+j)*2+1, i))/(2*h))
			}
		}
		out[c] = a
	}
	return out
}

func relErr(a, b *mat.Dense) float64 {
	var diff mat.Dense
	diff.Sub(a, b)
	return mat.Norm(&diff, 2) / mat.Norm(b, 2)
}

func TestJacobianRuleEqualsFiniteDifferencesOfComputedMap(t *testing.T) {
	datas := map[string]mixture.Mixture{
		"nonaffine": mustPoints(t, nonAffinePts),
		"gmm":       mustGaussianMix(t),
	}
	for _, sched := range []string{"vp", "edm", "ve"} {
		p := mustSchedule(t, sched)
		_, hi := p.Interval()
		grid, err := UniformGrid(p, 0.3*hi, 12)
		if err != nil {
			t.Fatal(err)
		}
		for dn, data := range datas {
			for _, sol := range Solvers {
				t.Run(fmt.Sprintf("%s/%s/%s", sched, dn, sol), func(t *testing.T) {
					in := Integration{Mixture: data, Schedule: p, Grid: grid, Solver: sol}
					n0, _ := p.At(grid[0])
					x0 := StartStates(4, 2, n0.Sigma, 7)
					in.Rules = []Rule{Jacobian}
					ch, err := in.Run(context.Background(), x0)
					if err != nil {
						t.Fatal(err)
					}
					fd := fdJacobian(t, in, x0, 1e-4*n0.Sigma)
					for c, a := range ch.A[0] {
						if e := relErr(a, fd[c]); e > 1e-6 {
							t.Errorf("chain %d: relative error %.3g vs finite differences\nA  = %v\nFD = %v", c, e, mat.Formatted(a), mat.Formatted(fd[c]))
						}
					}
				})
			}
		}
	}
}

func TestJacobianRuleEqualsFiniteDifferencesOnPublishedGrid(t *testing.T) {
	data := mustPoints(t, [][]float64{{0.5, 0}, {0, -0.5}, {0, 0}})
	full, err := PublishedGrid(19)
	if err != nil {
		t.Fatal(err)
	}
	grid := full[:12] // stop at t = 0.368 where the map is well conditioned
	for _, sched := range []string{"ve", "vp", "subvp", "edm"} {
		p, err := Published(sched)
		if err != nil {
			t.Fatal(err)
		}
		for _, sol := range []Solver{Euler, DDIM} {
			in := Integration{Mixture: data, Schedule: p, Grid: grid, Solver: sol, Rules: []Rule{Jacobian}}
			x0 := StartStates(4, 2, 1, 3)
			ch, err := in.Run(context.Background(), x0)
			if err != nil {
				t.Fatal(err)
			}
			fd := fdJacobian(t, in, x0, 1e-4)
			for c, a := range ch.A[0] {
				if e := relErr(a, fd[c]); e > 1e-6 {
					t.Errorf("%s/%s chain %d: relative error %.3g", sched, sol, c, e)
				}
			}
		}
	}
}

func TestPublishedGridMatchesDiffusersLinspaceTimesteps(t *testing.T) {
	g, err := PublishedGrid(19)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != 20 || g[0] != 0.999 || g[19] != 0 || math.Abs(g[18]-0.053) > 1e-15 || math.Abs(g[1]-0.946) > 1e-15 {
		t.Fatalf("grid %v", g)
	}
}
