package access

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// DefaultMaxRows bounds the rows (queries × vectors) of one graph call.
const DefaultMaxRows = 4096

// promptElements bounds rows × d of one graph call where a run must stop
// promptly: 28 rows of the MNIST ε-network (d = 784, with its
// 400-component mixture skip) take a fraction of a second a VJP call on 2
// CPU cores, where the 784 rows of one point's exact trace take seconds,
// and cost about as much per row (16 rows a call cost more: calls that
// small use the cores less well).
const promptElements = 28 * 784

// PromptRows is the rows of one graph call for points of dimension d that
// keeps a call short enough to check for cancellation between calls (the
// maxRows of NewVJPTrace, a bound on K × points for Hutchinson): ≥ 1.
func PromptRows(d int) int { return max(1, promptElements/max(d, 1)) }

// vjpRunner holds the compiled row-wise quadratic forms and matvec of a
// Net: quads is VJPQuadsGraph, its group size read from its inputs' rows
// (x [R, d], v [R·g, d]; g = 1 is one VJP a row).
type vjpRunner struct {
	net         *Net
	quads, mvec *model.Exec
	maxRows     int
}

func newVJPRunner(n *Net, maxRows int) (*vjpRunner, error) {
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	r := &vjpRunner{net: n, maxRows: maxRows}
	var err error
	if r.quads, err = n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
		group := in[1].Shape().Dimensions[0] / in[0].Shape().Dimensions[0]
		return VJPQuadsGraph(n.Network, scope, in[0], in[1], rowTimes(in[2], in[0]), rowTimes(in[3], in[0]), group)
	}); err != nil {
		return nil, err
	}
	if r.mvec, err = n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
		return VJPMatVecGraph(n.Network, scope, in[0], in[1], rowTimes(in[2], in[0]), rowTimes(in[3], in[0]))
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// run evaluates the quadratic forms (quad) or matvecs of rows x[i], v[i]
// [R, d] at one α, σ, in chunks of at most maxRows rows; it returns flat
// outputs, or ctx's error once ctx is done (checked before each chunk).
func (r *vjpRunner) run(ctx context.Context, quad bool, x, v *mat.Dense, alpha, sigma float64) ([]float64, error) {
	e := r.mvec
	if quad {
		e = r.quads
	}
	return r.runGroups(ctx, e, x, v, 1, alpha, sigma)
}

// runGroups is run for a graph e that takes g vectors per row of x (v has
// g·R rows, row i's at g·i … g·i+g−1; VJPQuadsGraph): chunks of x hold at
// most maxRows/g rows (at least one).
func (r *vjpRunner) runGroups(ctx context.Context, e *model.Exec, x, v *mat.Dense, g int, alpha, sigma float64) ([]float64, error) {
	var out []float64
	rows, d := x.Dims()
	per := max(1, r.maxRows/g)
	dt := r.net.DType
	for start := 0; start < rows; start += per {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+per, rows)
		res, err := e.Exec(tensormat.FromMatrix(dt, x.Slice(start, end, 0, d)), tensormat.FromMatrix(dt, v.Slice(start*g, end*g, 0, d)),
			tensormat.Filled(dt, 1, alpha), tensormat.Filled(dt, 1, sigma))
		if err != nil {
			return nil, fmt.Errorf("access: %w", err)
		}
		out = append(out, tensormat.Values(res[0])...)
	}
	return out, nil
}

// VJPTrace is the network's exact Fisher trace by d VJPs (eq. nll_VJP):
// tr F ≈ (1/σ) Σᵢ eᵢᵀ (∂ε_θ/∂x) eᵢ, the d basis vectors batched along rows,
// probeGroup of them sharing one forward pass (VJPQuadsGraph).
type VJPTrace struct{ r *vjpRunner }

// NewVJPTrace compiles the estimator; maxRows ≤ 0 takes DefaultMaxRows.
func NewVJPTrace(n *Net, maxRows int) (*VJPTrace, error) {
	r, err := newVJPRunner(n, maxRows)
	return &VJPTrace{r}, err
}

func (*VJPTrace) Name() string { return "vjp-exact" }

func (e *VJPTrace) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return e.TraceContext(context.Background(), c, x)
}

// TraceContext is Trace that stops between graph calls (of maxRows rows),
// with ctx's error, once ctx is done.
func (e *VJPTrace) TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	b, d, err := checkAt(c, x, nil)
	if err != nil {
		return nil, err
	}
	g := probeGroup(d, min(b*d, e.r.maxRows))
	reps := d / g
	xs, vs := mat.NewDense(b*reps, d, nil), mat.NewDense(b*d, d, nil) // point q's basis vectors at rows q·d … q·d+d−1
	for q := range b {
		for i := range reps {
			xs.SetRow(q*reps+i, tensormat.Row(x, q))
		}
		for i := range d {
			vs.Set(q*d+i, i, 1)
		}
	}
	quads, err := e.r.runGroups(ctx, e.r.quads, xs, vs, g, c.Alpha, c.Sigma)
	if err != nil {
		return nil, err
	}
	return sumGroups(quads, b, d, 1), nil
}

// sumGroups sums consecutive groups of n values for each of b queries, times scale.
func sumGroups(v []float64, b, n int, scale float64) []float64 {
	out := make([]float64, b)
	for q := range b {
		for _, x := range v[q*n : (q+1)*n] {
			out[q] += x
		}
		out[q] *= scale
	}
	return out
}

// Probe is the distribution of Hutchinson probe vectors.
type Probe int

const (
	Rademacher Probe = iota // entries ±1: Var = 2(‖F‖_F² − Σ F_ii²)/K for symmetric F
	Gaussian                // entries N(0,1): Var = 2‖F‖_F²/K for symmetric F
)

// sample fills z with one probe.
func (p Probe) sample(rng *rand.Rand, z []float64) {
	for i := range z {
		if p == Gaussian {
			z[i] = rng.NormFloat64()
		} else if rng.Uint64()&1 == 0 {
			z[i] = 1
		} else {
			z[i] = -1
		}
	}
}

// DrawProbes is Hutchinson's probes for b points of dimension d, k a
// point, from the stream seeded by seed: point q's at rows q·k … q·k+k−1.
// Every estimator that takes Hutchinson's probes draws them here, so that
// one seed gives one set of probes whichever computes the quadratic forms.
func DrawProbes(p Probe, seed uint64, b, k, d int) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	vs := mat.NewDense(b*k, d, nil)
	for i := range b * k {
		p.sample(rng, vs.RawRowView(i))
	}
	return vs
}

// Hutchinson estimates tr F ≈ (1/K) Σₖ zₖᵀ F zₖ with K independent probes
// per query, drawn from a stream seeded by Seed at every call (same seed,
// same estimate).
type Hutchinson struct {
	r     *vjpRunner // the network, and the rows a call
	K     int
	Probe Probe
	Seed  uint64
}

// sharedProbes bounds the probes whose VJPs share one forward pass in a
// graph: each adds a backward pass to the graph.
const sharedProbes = 8

// sharedRows is the fewest rows each VJP of a shared forward pass should
// run on. A backward pass costs its products' set-up besides their rows:
// the Go backend repacks a product's operands on every call, for the
// MNIST ε-network the 40 MB basis of its mixture skip, which costs as much
// as the arithmetic of some tens of rows. Shared by few rows, a forward
// pass saved less than the packings the extra backward passes added
// (Hutchinson-16 at batch 1 took longer in 8 passes of 2 rows than in one
// of 16: figures/bench/NOTES.md). Tests lower it.
var sharedRows = 32

// probeGroup is the vectors a point's forward pass is shared by
// (VJPQuadsGraph), for k vectors a point and calls of rows rows (points ×
// vectors): the largest divisor of k that is at most sharedProbes and
// leaves each VJP at least sharedRows rows, or 1.
func probeGroup(k, rows int) int {
	for g := min(k, sharedProbes, rows/sharedRows); g > 1; g-- {
		if k%g == 0 {
			return g
		}
	}
	return 1
}

// NewHutchinson compiles the estimator.
func NewHutchinson(n *Net, k int, p Probe, seed uint64) (*Hutchinson, error) {
	if k < 1 {
		return nil, fmt.Errorf("access: Hutchinson needs K ≥ 1 probes, got %d", k)
	}
	r, err := newVJPRunner(n, 0)
	if err != nil {
		return nil, err
	}
	return &Hutchinson{r: r, K: k, Probe: p, Seed: seed}, nil
}

func (h *Hutchinson) Name() string { return fmt.Sprintf("hutchinson-%d", h.K) }

// SetMaxRows bounds the rows (points × probes) of one graph call, e.g. to
// PromptRows(d) so that a cancel is seen between calls (a call holds at
// least one group of a point's probes, probeGroup). The probes, drawn
// per Trace call, do not change.
func (h *Hutchinson) SetMaxRows(n int) { h.r.maxRows = max(n, 1) }

func (h *Hutchinson) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return h.TraceContext(context.Background(), c, x)
}

// TraceContext is Trace that stops between graph calls, with ctx's error,
// once ctx is done. A point's probes are taken probeGroup at a time by
// one forward pass and as many VJPs (VJPQuadsGraph).
func (h *Hutchinson) TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	b, d, err := checkAt(c, x, nil)
	if err != nil {
		return nil, err
	}
	vs := DrawProbes(h.Probe, h.Seed, b, h.K, d)
	g := probeGroup(h.K, min(b*h.K, h.r.maxRows))
	reps := h.K / g
	xs := mat.NewDense(b*reps, d, nil) // point q at rows q·reps … q·reps+reps−1, each with g probes
	for i := range b * reps {
		xs.SetRow(i, tensormat.Row(x, i/reps))
	}
	quads, err := h.r.runGroups(ctx, h.r.quads, xs, vs, g, c.Alpha, c.Sigma)
	if err != nil {
		return nil, err
	}
	return sumGroups(quads, b, h.K, 1/float64(h.K)), nil
}

// HutchPP is Hutch++ (Meyer et al. 2021) with M matvecs per query, a third
// each for the sketch S, the exact trace on range(F S) and Hutchinson on
// the deflated remainder: tr F ≈ tr(QᵀFQ) + (3/M) Σ gᵀ(I−QQᵀ)F(I−QQᵀ)g.
type HutchPP struct {
	r    *vjpRunner
	M    int
	Seed uint64
}

// NewHutchPP compiles the estimator; m ≥ 3.
func NewHutchPP(n *Net, m int, seed uint64) (*HutchPP, error) {
	if m < 3 {
		return nil, fmt.Errorf("access: Hutch++ needs at least 3 matvecs, got %d", m)
	}
	r, err := newVJPRunner(n, 0)
	return &HutchPP{r, m, seed}, err
}

func (h *HutchPP) Name() string { return fmt.Sprintf("hutch++-%d", h.M) }

// SetMaxRows bounds the rows of one graph call (see Hutchinson.SetMaxRows).
func (h *HutchPP) SetMaxRows(n int) { h.r.maxRows = max(n, 1) }

func (h *HutchPP) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return h.TraceContext(context.Background(), c, x)
}

// TraceContext is Trace that stops between graph calls, with ctx's error,
// once ctx is done.
func (h *HutchPP) TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	b, d, err := checkAt(c, x, nil)
	if err != nil {
		return nil, err
	}
	k := min(h.M/3, d)
	rng := rand.New(rand.NewPCG(h.Seed, 0x5eed))
	xs, vs := mat.NewDense(b*k, d, nil), mat.NewDense(b*k, d, nil)
	for q := range b {
		for j := range k {
			xs.SetRow(q*k+j, tensormat.Row(x, q))
			Rademacher.sample(rng, vs.RawRowView(q*k+j))
		}
	}
	ys, err := h.r.run(ctx, false, xs, vs, c.Alpha, c.Sigma) // F S, k vectors per query
	if err != nil {
		return nil, err
	}
	// Per query: k rows Q (an orthonormal basis of range(F S)), then k rows
	// (I − QQᵀ) g of Rademacher g.
	xs2, vs2 := mat.NewDense(2*b*k, d, nil), mat.NewDense(2*b*k, d, nil)
	for q := range b {
		var qr mat.QR
		qr.Factorize(mat.NewDense(k, d, ys[q*k*d:(q+1)*k*d]).T())
		var qm mat.Dense
		qr.QTo(&qm) // d×d; the first k columns span range(F S)
		base := 2 * q * k
		for j := range k {
			xs2.SetRow(base+j, tensormat.Row(x, q))
			vs2.SetRow(base+j, mat.Col(nil, j, &qm))
		}
		for i := range k {
			g := mat.NewVecDense(d, vs2.RawRowView(base+k+i))
			Rademacher.sample(rng, g.RawVector().Data)
			for j := range k { // g ← (I − QQᵀ) g
				col := mat.NewVecDense(d, mat.Col(nil, j, &qm))
				g.AddScaledVec(g, -mat.Dot(col, g), col)
			}
			xs2.SetRow(base+k+i, tensormat.Row(x, q))
		}
	}
	quads, err := h.r.run(ctx, true, xs2, vs2, c.Alpha, c.Sigma)
	if err != nil {
		return nil, err
	}
	out := make([]float64, b)
	for q := range b {
		for j := range k {
			out[q] += quads[q*2*k+j] + quads[q*2*k+k+j]/float64(k)
		}
	}
	return out, nil
}

// VJPMatVec is the Fisher operator by one VJP per vector (eq. Adjoint_VJP).
type VJPMatVec struct{ r *vjpRunner }

// NewVJPMatVec compiles the operator.
func NewVJPMatVec(n *Net) (*VJPMatVec, error) {
	r, err := newVJPRunner(n, 0)
	return &VJPMatVec{r}, err
}

func (*VJPMatVec) Name() string { return "vjp-matvec" }

// Apply implements score.FisherOperator.
func (m *VJPMatVec) Apply(s score.State, v *mat.Dense) (*mat.Dense, error) {
	b, d, err := checkAt(s.At, s.X, v)
	if err != nil {
		return nil, err
	}
	out, err := m.r.run(context.Background(), false, s.X, v, s.At.Alpha, s.At.Sigma)
	if err != nil {
		return nil, err
	}
	return mat.NewDense(b, d, out), nil
}
