package ot

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"gonum.org/v1/gonum/mat"
)

// Solver is a PF-ODE step.
type Solver string

const (
	Euler Solver = "euler" // x' = x + dt h(x, t)
	DDIM  Solver = "ddim"  // x' = α' ȳ + σ' (x − α ȳ)/σ, ȳ the exact denoiser
	Heun  Solver = "heun"  // explicit trapezoid (2 evaluations)
	RK4   Solver = "rk4"   // classical Runge–Kutta (4 evaluations)
)

// Solvers lists the solvers ParseSolver knows.
var Solvers = []Solver{Euler, DDIM, Heun, RK4}

// ParseSolver returns the solver with that name.
func ParseSolver(s string) (Solver, error) {
	for _, v := range Solvers {
		if strings.EqualFold(s, string(v)) {
			return v, nil
		}
	}
	return "", fmt.Errorf("ot: unknown solver %q (euler, ddim, heun, rk4)", s)
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
	Path    Path
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
	X *mat.Dense     // end states [K, d]
	A [][]*mat.Dense // A[r][k]: the matrix of Rules[r] for chain k
}

// butcher tableaux of the explicit Runge–Kutta solvers.
type tableau struct {
	a    [][]float64
	b, c []float64
}

var tableaux = map[Solver]tableau{
	Euler: {a: [][]float64{{}}, b: []float64{1}, c: []float64{0}},
	Heun:  {a: [][]float64{{}, {1}}, b: []float64{0.5, 0.5}, c: []float64{0, 1}},
	RK4: {a: [][]float64{{}, {0.5}, {0, 0.5}, {0, 0, 1}},
		b: []float64{1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}, c: []float64{0, 0.5, 0.5, 1}},
}

func (in *Integration) check(x0 *mat.Dense) (k, d int, err error) {
	if in.Mixture == nil || in.Path == nil {
		return 0, 0, fmt.Errorf("ot: integration needs a mixture and a path")
	}
	if len(in.Grid) < 2 {
		return 0, 0, fmt.Errorf("ot: time grid needs at least 2 points (M ≥ 1 steps), got %d", len(in.Grid))
	}
	for i := 1; i < len(in.Grid); i++ {
		if !(in.Grid[i] < in.Grid[i-1]) {
			return 0, 0, fmt.Errorf("ot: time grid must decrease strictly, got t[%d] = %g, t[%d] = %g", i-1, in.Grid[i-1], i, in.Grid[i])
		}
	}
	if _, ok := tableaux[in.Solver]; !ok && in.Solver != DDIM {
		return 0, 0, fmt.Errorf("ot: unknown solver %q", in.Solver)
	}
	for _, r := range in.Rules {
		if r != Jacobian && r != PaperRule && r != PublishedRule {
			return 0, 0, fmt.Errorf("ot: unknown matrix rule %q", r)
		}
	}
	if x0 == nil || x0.IsEmpty() {
		return 0, 0, fmt.Errorf("ot: no starting states")
	}
	k, d = x0.Dims()
	if d != in.Mixture.Dim() {
		return 0, 0, fmt.Errorf("ot: data of dim %d, starting states of dim %d", in.Mixture.Dim(), d)
	}
	return k, d, nil
}

// Run integrates the chains that start at x0 ([K, d], at time Grid[0]).
func (in *Integration) Run(ctx context.Context, x0 *mat.Dense) (*Chains, error) {
	k, d, err := in.check(x0)
	if err != nil {
		return nil, err
	}
	x := make([]float64, k*d)
	for i := 0; i < k; i++ {
		copy(x[i*d:(i+1)*d], x0.RawRowView(i))
	}
	mats := make([][]float64, len(in.Rules))
	for r := range mats {
		mats[r] = identities(k, d)
	}
	w := newWork(k, d)
	if in.Observe != nil {
		in.Observe(0, in.Grid[0], mat.NewDense(k, d, x), mats)
	}
	for i := 0; i+1 < len(in.Grid); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := in.step(in.Grid[i], in.Grid[i+1], x, mats, w); err != nil {
			return nil, fmt.Errorf("ot: step %d (t = %g → %g): %w", i+1, in.Grid[i], in.Grid[i+1], err)
		}
		if in.Observe != nil {
			in.Observe(i+1, in.Grid[i+1], mat.NewDense(k, d, x), mats)
		}
	}
	out := &Chains{X: mat.NewDense(k, d, x), A: make([][]*mat.Dense, len(in.Rules))}
	for r, m := range mats {
		out.A[r] = make([]*mat.Dense, k)
		for c := 0; c < k; c++ {
			out.A[r][c] = mat.NewDense(d, d, append([]float64(nil), m[c*d*d:(c+1)*d*d]...))
		}
	}
	return out, nil
}

// field is the PF-ODE at one node for a batch: the drift h = f x − ½ g² ∇log q
// (with ∇log q = −(x − α ȳ)/σ²), its Jacobian J = f I − ½ g² ∇²log q =
// f I + ½ g² F, the Fisher F and the denoiser ȳ. (The paper's B of eq. ot_b
// is f I − ½ g² F: not J, see the package doc.)
type field struct{ h, j, fis, ybar []float64 }

func evalField(m mixture.Mixture, n Node, x []float64, k, d int, f *field) error {
	if !(n.Sigma > 0) || !(n.Alpha > 0) {
		return fmt.Errorf("PF-ODE undefined at t = %g (α = %g, σ = %g)", n.T, n.Alpha, n.Sigma)
	}
	r, err := m.Eval(mixture.Query{Schedule: frozen{n.Alpha, n.Sigma}, T: n.T, X: mat.NewDense(k, d, x), Want: mixture.Denoiser | mixture.Full})
	if err != nil {
		return err
	}
	s2 := n.Sigma * n.Sigma
	half := 0.5 * n.G2
	for c := 0; c < k; c++ {
		xr, yr := x[c*d:(c+1)*d], r.Denoiser.RawRowView(c)
		copy(f.ybar[c*d:], yr)
		for i := 0; i < d; i++ {
			f.h[c*d+i] = n.F*xr[i] + half*(xr[i]-n.Alpha*yr[i])/s2
		}
		fis := r.Fisher[c]
		jc := f.j[c*d*d : (c+1)*d*d]
		for i := 0; i < d; i++ {
			for l := 0; l < d; l++ {
				fv := fis.At(i, l)
				f.fis[c*d*d+i*d+l] = fv
				v := half * fv
				if i == l {
					v += n.F
				}
				jc[i*d+l] = v
			}
		}
	}
	for _, v := range f.h {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("PF-ODE drift is not finite at t = %g", n.T)
		}
	}
	return nil
}
