package pfode

import (
	"context"
	"fmt"
	"math"
)

// Stats are the counts of a solve (cf. torchdiffeq's and diffrax's NFE
// statistics).
type Stats struct {
	Steps    int // accepted steps
	Rejected int // rejected steps (adaptive only)
	NFE      int // evaluations of the system (for PFODE: model evaluations)
}

// Add accumulates another solve's counts.
func (s *Stats) Add(o Stats) {
	s.Steps += o.Steps
	s.Rejected += o.Rejected
	s.NFE += o.NFE
}

// Observer is called after every accepted step (step = 1, 2, …) with the
// time reached and the state there; it must not keep or modify y. A non-nil
// error stops the solve and is returned.
type Observer func(step int, t float64, y []float64) error

// Uniform is the grid from, …, to of m equal steps for Solve (m + 1
// times, increasing or decreasing), its last time exactly to.
func Uniform(from, to float64, m int) []float64 {
	g := make([]float64, m+1)
	for i := range g {
		g[i] = from + (to-from)*float64(i)/float64(m)
	}
	g[m] = to
	return g
}

// Solve integrates sys with a fixed-step method on the grid t_0, t_1, …, t_M
// (strictly monotone, increasing or decreasing), overwriting y (the state
// at t_0) with the state at t_M.
func Solve(ctx context.Context, sys System, m Method, grid []float64, y []float64, obs Observer) (Stats, error) {
	var st Stats
	if m == nil {
		return st, fmt.Errorf("pfode: no method")
	}
	if err := checkGrid(grid); err != nil {
		return st, err
	}
	if len(y) != sys.Len() {
		return st, fmt.Errorf("pfode: state of length %d, system of length %d", len(y), sys.Len())
	}
	var w *work
	if tb, ok := m.(*Tableau); ok {
		w = newWork(len(y), tb.Stages())
	}
	for i := 0; i+1 < len(grid); i++ {
		if ctx != nil {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		n, err := m.step(sys, grid[i], grid[i+1], y, w)
		st.NFE += n
		if err != nil {
			return st, fmt.Errorf("pfode: %s step %d (t = %g → %g): %w", m.Name(), i+1, grid[i], grid[i+1], err)
		}
		st.Steps++
		if obs != nil {
			if err := obs(i+1, grid[i+1], y); err != nil {
				return st, err
			}
		}
	}
	return st, nil
}

// checkGrid requires at least two finite times, strictly monotone.
func checkGrid(grid []float64) error {
	if len(grid) < 2 {
		return fmt.Errorf("pfode: a time grid needs at least 2 times, got %d", len(grid))
	}
	dir := math.Copysign(1, grid[1]-grid[0])
	for i := 1; i < len(grid); i++ {
		if math.IsNaN(grid[i]) || math.IsInf(grid[i], 0) || !((grid[i]-grid[i-1])*dir > 0) {
			return fmt.Errorf("pfode: time grid must be finite and strictly monotone, got t[%d] = %g, t[%d] = %g", i-1, grid[i-1], i, grid[i])
		}
	}
	return nil
}

// Exponential is a system with an exponential-integrator step: the exact
// solution of its linear part with the nonlinear part frozen at the start.
type Exponential interface {
	System
	// ExpStep advances y from t to t1 in place and returns the number of
	// evaluations.
	ExpStep(t, t1 float64, y []float64) (int, error)
}

// DDIM is the exponential-integrator step of the PF-ODE (Song et al. 2021,
// DDIM with η = 0; Lu et al. 2022, DPM-Solver-1): with the denoiser ȳ frozen
// at (x, t),
//
//	x' = (σ'/σ) x + (α' − σ' α/σ) ȳ(x, t),
//
// where α', σ' are the coefficients at t1. It is exact when ȳ does not
// depend on x along the path (a single data point), and of order 1
// otherwise. It needs a system implementing Exponential (PFODE does).
var DDIM Method = ddim{}

type ddim struct{}

func (ddim) Name() string   { return "ddim" }
func (ddim) String() string { return "ddim" }
func (ddim) Order() int     { return 1 }
func (ddim) step(sys System, t, t1 float64, y []float64, _ *work) (int, error) {
	e, ok := sys.(Exponential)
	if !ok {
		return 0, fmt.Errorf("pfode: DDIM needs an exponential-integrator system, not %T", sys)
	}
	return e.ExpStep(t, t1, y)
}
