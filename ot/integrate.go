package ot

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

// Solver is a dfx/pfode fixed-step method; the package uses these four.
type Solver = pfode.Method

// The solvers of the OT test (dfx/pfode's): Euler x' = x + dt h(x, t);
// DDIM x' = α' ȳ + σ' (x − α ȳ)/σ with ȳ the exact denoiser; Heun the
// explicit trapezoid (2 evaluations); RK4 the classical Runge–Kutta method.
var (
	Euler = pfode.Euler
	DDIM  = pfode.DDIM
	Heun  = pfode.Heun
	RK4   = pfode.RK4
)

// Solvers lists the solvers ParseSolver knows.
var Solvers = []Solver{Euler, DDIM, Heun, RK4}

// ParseSolver returns the solver with that name (any case).
func ParseSolver(s string) (Solver, error) {
	m, err := pfode.ParseMethod(strings.ToLower(s))
	if err != nil || !slices.Contains(Solvers, m) {
		return nil, fmt.Errorf("ot: unknown solver %q (euler, ddim, heun, rk4)", s)
	}
	return m, nil
}

// Rule is how the matrix A is carried along a chain (see the package doc).
type Rule string

const (
	Jacobian      Rule = "jacobian"  // exact ∂x_s/∂x_T of the computed discrete map
	PaperRule     Rule = "paper"     // A ← A + dt Aᵀ B (paper's Algorithm)
	PublishedRule Rule = "published" // A ← A + dt B A (published script)
)

// Integration is one batch of PF-ODE chains on a time grid.
type Integration struct {
	Mixture mixture.Mixture
	// Model, if set, drives the chains instead of Mixture's exact model: a
	// network (access.NetModel with a Fisher operator, whose F_θ the
	// Jacobian rule carries); the explicit rules need the symmetric Fisher
	// of an exact model and are refused with it.
	Model    score.Model
	Schedule schedule.Source
	// Grid holds the M+1 times the chains visit, from the start time
	// Grid[0] down to the end time Grid[M].
	Grid   []float64
	Solver Solver
	// Rules are the matrices carried (none: states only).
	Rules []Rule
	// Observe, if set, sees every grid point i = 0…M: the time, the states
	// [K, d] and, per rule, the K matrices as one flat row-major slice
	// (K·d·d). It must not keep or modify them.
	Observe func(i int, t float64, x *mat.Dense, a [][]float64)
}

// Chains are the ends of a batch of chains.
type Chains struct {
	X     *mat.Dense     // end states [K, d]
	A     [][]*mat.Dense // A[r][k]: the matrix of Rules[r] for chain k
	Stats pfode.Stats
}

func (in *Integration) check(x0 *mat.Dense) (k, d int, err error) {
	if in.Mixture == nil && in.Model == nil || in.Schedule == nil {
		return 0, 0, fmt.Errorf("ot: integration needs a mixture (or a model) and a schedule")
	}
	if len(in.Grid) < 2 {
		return 0, 0, fmt.Errorf("ot: time grid needs at least 2 points (M ≥ 1 steps), got %d", len(in.Grid))
	}
	for i := 1; i < len(in.Grid); i++ {
		if !(in.Grid[i] < in.Grid[i-1]) {
			return 0, 0, fmt.Errorf("ot: time grid must decrease strictly, got t[%d] = %g, t[%d] = %g", i-1, in.Grid[i-1], i, in.Grid[i])
		}
	}
	known := false
	for _, s := range Solvers {
		known = known || in.Solver == s
	}
	if !known {
		return 0, 0, fmt.Errorf("ot: unknown solver %v", in.Solver)
	}
	for _, r := range in.Rules {
		if r != Jacobian && r != PaperRule && r != PublishedRule {
			return 0, 0, fmt.Errorf("ot: unknown matrix rule %q", r)
		}
		if r != Jacobian && in.Model != nil {
			return 0, 0, fmt.Errorf("ot: the %s rule needs an exact model's symmetric Fisher, not a network's", r)
		}
	}
	if x0 == nil || x0.IsEmpty() {
		return 0, 0, fmt.Errorf("ot: no starting states")
	}
	k, d = x0.Dims()
	if in.Model == nil && d != in.Mixture.Dim() {
		return 0, 0, fmt.Errorf("ot: data of dim %d, starting states of dim %d", in.Mixture.Dim(), d)
	}
	return k, d, nil
}

// exactModel is the chains' model (the mixture's exact one, score.Exact, or
// Integration.Model), asked for the
// Fisher at every evaluation when the explicit rules need it. It keeps the
// first evaluation after reset: the coefficients and Fisher at a step's
// start (x_n, t_n), which every solver here evaluates first, and which the
// explicit matrix rules use.
type exactModel struct {
	exact  score.Model
	fisher bool // always ask for the Fisher (explicit rules)
	seen   bool
	c0     schedule.Coefficients
	f0     []*mat.SymDense
}

func (m *exactModel) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	if m.fisher {
		want |= score.WantFisher
	}
	ev, err := m.exact.Eval(c, x, want)
	if err != nil {
		return nil, err
	}
	if !m.seen {
		m.seen, m.c0, m.f0 = true, c, ev.Fisher
	}
	return ev, nil
}

// Run integrates the chains that start at x0 ([K, d], at time Grid[0]) with
// dfx/pfode: the Jacobian rule is pfode's Jacobian component (the
// variational equation through the same stages, or the DDIM step's exact
// Jacobian), so A is the derivative of the computed discrete map; the
// paper's and the published rules are explicit in the paper's
// B = f I − ½ g² F (eq. ot_b) at the step's start (x_n, t_n), whatever the
// state solver.
func (in *Integration) Run(ctx context.Context, x0 *mat.Dense) (*Chains, error) {
	k, d, err := in.check(x0)
	if err != nil {
		return nil, err
	}
	var carry pfode.Carry
	explicit := false
	for _, r := range in.Rules {
		if r == Jacobian {
			carry = pfode.Jacobian
		} else {
			explicit = true
		}
	}
	var m score.Model = score.Exact{Mixture: in.Mixture}
	if in.Model != nil {
		m = in.Model
	}
	model := &exactModel{exact: m, fisher: explicit}
	sys := pfode.New(in.Schedule, model, k, d, carry)
	sys.Drive = score.WantDenoiser // the states move with the exact denoiser
	y := sys.Init(x0, nil)
	mats := make([][]float64, len(in.Rules))
	for r, rule := range in.Rules {
		if rule == Jacobian {
			mats[r] = sys.Jacobians(y) // a view: the solver updates it in place
		} else {
			mats[r] = identities(k, d)
		}
	}
	if in.Observe != nil {
		in.Observe(0, in.Grid[0], sys.X(y), mats)
	}
	b, tmp := make([]float64, d*d), make([]float64, d*d)
	obs := func(step int, t float64, y []float64) error {
		if explicit {
			t0 := in.Grid[step-1]
			if !model.seen || math.Abs(model.c0.T-t0) > 1e-9 {
				return fmt.Errorf("ot: step %d: no evaluation at its start t = %g", step, t0)
			}
			in.explicitRules(mats, model.c0, model.f0, t-t0, k, d, b, tmp)
		}
		model.seen = false
		if in.Observe != nil {
			in.Observe(step, t, sys.X(y), mats)
		}
		return nil
	}
	st, err := pfode.Solve(ctx, sys, in.Solver, in.Grid, y, obs)
	if err != nil {
		return nil, fmt.Errorf("ot: %w", err)
	}
	out := &Chains{X: mat.DenseCopyOf(sys.X(y)), A: make([][]*mat.Dense, len(in.Rules)), Stats: st}
	for r, m := range mats {
		out.A[r] = make([]*mat.Dense, k)
		for c := 0; c < k; c++ {
			out.A[r][c] = mat.NewDense(d, d, append([]float64(nil), m[c*d*d:(c+1)*d*d]...))
		}
	}
	return out, nil
}

// explicitRules applies A ← A + dt Aᵀ B (paper) or A ← A + dt B A
// (published) with the paper's B = f I − ½ g² F at the step's start.
func (in *Integration) explicitRules(mats [][]float64, c schedule.Coefficients, fis []*mat.SymDense, dt float64, k, d int, b, tmp []float64) {
	for r, rule := range in.Rules {
		if rule == Jacobian {
			continue
		}
		a := mats[r]
		for ch := 0; ch < k; ch++ {
			ac := a[ch*d*d : (ch+1)*d*d]
			for i := 0; i < d; i++ {
				for l := 0; l < d; l++ {
					b[i*d+l] = -0.5 * c.G2 * fis[ch].At(i, l)
				}
			}
			for i := 0; i < d; i++ {
				b[i*d+i] += c.F
			}
			if rule == PublishedRule {
				mul(tmp, b, ac, d, false) // B A
			} else {
				mul(tmp, ac, b, d, true) // Aᵀ B
			}
			for i := range ac {
				ac[i] += dt * tmp[i]
			}
		}
	}
}

// mul sets dst = a·b, or aᵀ·b when transA (d×d, row-major).
func mul(dst, a, b []float64, d int, transA bool) {
	for i := 0; i < d; i++ {
		for l := 0; l < d; l++ {
			s := 0.0
			for m := 0; m < d; m++ {
				if transA {
					s += a[m*d+i] * b[m*d+l]
				} else {
					s += a[i*d+m] * b[m*d+l]
				}
			}
			dst[i*d+l] = s
		}
	}
}

func identities(k, d int) []float64 {
	a := make([]float64, k*d*d)
	for c := 0; c < k; c++ {
		for i := 0; i < d; i++ {
			a[c*d*d+i*d+i] = 1
		}
	}
	return a
}
