package ot

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

// DefaultChains is the number of chains of a test unless told otherwise.
const DefaultChains = 256

// Spec is one OT test: data, schedule, grid, solver and chains.
type Spec struct {
	Data mixture.Mixture
	// Model, if set, runs the test on it instead of Data's exact model
	// (Integration.Model: a network; the Jacobian rule only; X0 given).
	Model score.Model
	// Schedule gives the coefficients at the grid's times: a continuous
	// schedule (schedule.Continuous) or the published table (Published).
	Schedule schedule.Source
	Grid     []float64 // M+1 decreasing times, Grid[0] = T, Grid[M] = s
	Solver   Solver
	Rules    []Rule // default {Jacobian}
	// X0 are given starting states [K, d]; if nil, Chains (default
	// DefaultChains) states are drawn from N(0, PriorStd² I) with Seed.
	X0       *mat.Dense
	Chains   int
	Seed     uint64
	PriorStd float64 // 0: σ(Grid[0]), the prior of the PF-ODE
	Tol      float64 // asymmetry tolerance; 0: DefaultTol
	// Observe is passed to the Integration.
	Observe func(i int, t float64, x *mat.Dense, a [][]float64)
}

// Outcome is the result of Test: per rule, the verdict of every chain and
// their summary, with the chains' ends.
type Outcome struct {
	Rules    []Rule
	X0       *mat.Dense
	Chains   *Chains
	Verdicts [][]Verdict // [rule][chain]
	Summary  []Summary   // [rule]
}

// Of returns the summary of a rule (ok false if it was not carried).
func (o *Outcome) Of(r Rule) (Summary, bool) {
	for i, v := range o.Rules {
		if v == r {
			return o.Summary[i], true
		}
	}
	return Summary{}, false
}

// StartStates draws k states from N(0, std² I) in dimension d; the same
// seed gives the same states.
func StartStates(k, d int, std float64, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return schedule.SamplePrior(schedule.Coefficients{Sigma: std}, k, d, rng)
}

// Test integrates the chains and judges every matrix.
func Test(ctx context.Context, sp Spec) (*Outcome, error) {
	if sp.Data == nil && (sp.Model == nil || sp.X0 == nil) {
		return nil, fmt.Errorf("ot: no data (a Model needs its starting states X0)")
	}
	if sp.Schedule == nil {
		return nil, fmt.Errorf("ot: no schedule")
	}
	if len(sp.Grid) < 2 {
		return nil, fmt.Errorf("ot: need at least 1 step (a grid of 2 times), got %d times", len(sp.Grid))
	}
	rules := sp.Rules
	if len(rules) == 0 {
		rules = []Rule{Jacobian}
	}
	x0 := sp.X0
	if x0 == nil {
		k := sp.Chains
		if k == 0 {
			k = DefaultChains
		}
		if k < 1 {
			return nil, fmt.Errorf("ot: need at least 1 chain, got %d", k)
		}
		std := sp.PriorStd
		if std == 0 {
			c, err := sp.Schedule.At(sp.Grid[0])
			if err != nil {
				return nil, fmt.Errorf("ot: start time: %w", err)
			}
			std = c.Sigma
		}
		x0 = StartStates(k, sp.Data.Dim(), std, sp.Seed)
	}
	in := &Integration{Mixture: sp.Data, Model: sp.Model, Schedule: sp.Schedule, Grid: sp.Grid, Solver: sp.Solver, Rules: rules, Observe: sp.Observe}
	ch, err := in.Run(ctx, x0)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Rules: rules, X0: x0, Chains: ch, Verdicts: make([][]Verdict, len(rules)), Summary: make([]Summary, len(rules))}
	for r := range rules {
		vs := make([]Verdict, len(ch.A[r]))
		for c, a := range ch.A[r] {
			vs[c] = Judge(a, sp.Tol)
		}
		out.Verdicts[r] = vs
		out.Summary[r] = Summarise(vs)
	}
	return out, nil
}

// Grid is M+1 times from the path's T down to s, of a kind known to
// schedule.TimeGrid ("uniform", "logsigma", "karras"); s ≤ 0 means TMin.
// Only continuous schedules have the inverse σ⁻¹ the non-uniform kinds need.
func Grid(p schedule.Source, kind string, s float64, m int) ([]float64, error) {
	if kind == "" || kind == schedule.GridUniform {
		return UniformGrid(p, s, m)
	}
	c, ok := p.(schedule.Continuous)
	if !ok {
		return nil, fmt.Errorf("ot: grid kind %q needs a continuous schedule, not %s", kind, p.Name())
	}
	lo, hi := p.Interval()
	if s <= 0 {
		s = lo
	}
	if !(s < hi) {
		return nil, fmt.Errorf("ot: end time s = %g must be below T = %g", s, hi)
	}
	return schedule.TimeGrid(c.Schedule, kind, s, hi, m)
}

// UniformGrid is M+1 times uniform in t from the schedule's T down to s
// (the paper's text gives no grid; dt = t_{i−1} − t_i). s ≤ 0 means the
// schedule's smallest time TMin (σ must stay positive).
func UniformGrid(p schedule.Source, s float64, m int) ([]float64, error) {
	if m < 1 {
		return nil, fmt.Errorf("ot: need M ≥ 1 steps, got %d", m)
	}
	lo, hi := p.Interval()
	if s <= 0 {
		s = lo
	}
	if !(s < hi) {
		return nil, fmt.Errorf("ot: end time s = %g must be below T = %g", s, hi)
	}
	if s < lo {
		return nil, fmt.Errorf("ot: end time s = %g below the schedule's TMin = %g: %w", s, lo, schedule.ErrTime)
	}
	g := make([]float64, m+1)
	for i := range g {
		g[i] = hi + (s-hi)*float64(i)/float64(m)
	}
	g[m] = s
	return g, nil
}

// Points is the Dirac mixture of the given points (rows, equal weights).
func Points(rows [][]float64) (*mixture.Dirac, error) {
	if len(rows) == 0 || len(rows[0]) == 0 {
		return nil, fmt.Errorf("ot: empty data set: %w", mixture.ErrInput)
	}
	d := len(rows[0])
	y := mat.NewDense(len(rows), d, nil)
	for i, r := range rows {
		if len(r) != d {
			return nil, fmt.Errorf("ot: point %d has %d coordinates, want %d: %w", i, len(r), d, mixture.ErrInput)
		}
		y.SetRow(i, r)
	}
	return mixture.NewDirac(y, nil)
}

// SingleGaussian is the mixture of one Gaussian N(mean, cov).
func SingleGaussian(mean []float64, cov *mat.SymDense) (*mixture.Gaussian, error) {
	if len(mean) == 0 {
		return nil, fmt.Errorf("ot: empty mean: %w", mixture.ErrInput)
	}
	return mixture.NewGaussian(mat.NewDense(1, len(mean), append([]float64(nil), mean...)), []*mat.SymDense{cov}, nil)
}
