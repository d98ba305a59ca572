package models

import (
	"context"
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// SkipHutchinsonTrace is the Fisher trace of an ε-network with a mixture
// skip, ε̂ = m(x) + r(x, y(x)) with y = (x − σm)/α the skip's denoiser, as
// the skip's exact trace plus Hutchinson with K Rademacher probes on the
// residual, the probes taken through the skip in closed form. With A =
// ∂r/∂x and B = ∂r/∂y the residual's partial Jacobians and F_mix the skip
// mixture's Fisher (∂m/∂x = σF_mix),
//
//	tr F_θ = tr F_mix + (1/σ) tr(A + B(I − σ²F_mix)/α),
//
// and for a probe v, vᵀ(A + B(I − σ²F_mix)/α)v = (Aᵀv)·v + (Bᵀv)·u with
// u = (v − σ²F_mix v)/α. The skip's score, its trace and F_mix v for every
// probe are one evaluation of the mixture on the host (float64,
// dfx/mixture), which skips the components without responsibility at any
// point of a block of rows;
// the residual's forward pass and its K VJPs, with y an input, are one
// graph that never evaluates the skip. Through the skip (access.
// ControlVariate on ResidualAccessNetwork, SkipControlVariate), every
// probe's VJP cost two products with every component's basis. The two
// estimate the same number up to the network's rounding: the probes are
// access.DrawProbes' for the same seed.
//
// It computes ε̂ = m + r on the way (access.EpsTracer): a likelihood solve
// through access.NetModel pays no forward pass of its own. The registry's
// spec is "skip-hutchinson-K" (SkipHutchinson).
type SkipHutchinsonTrace struct {
	net     *access.Net
	mix     *mixture.Gaussian
	exec    *model.Exec // patchQuadsGraph or residualQuadsGraph
	k       int
	seed    uint64
	maxRows int
}

// NewSkipHutchinson compiles the estimator on n, whose store must hold an
// ε-network with a mixture skip (n's Eps is its ε̂: AccessNetwork,
// NewAccessNet); k ≥ 1 probes drawn from seed at every call. On a patch
// trunk with the SiLU the residual's VJPs are written out
// (patchQuadsGraph), on any other by graph.Gradient (residualQuadsGraph).
func NewSkipHutchinson(n *access.Net, k int, seed uint64) (*SkipHutchinsonTrace, error) {
	quads := residualQuadsGraph
	if n != nil && n.Store != nil && handWrittenQuads(n.Store.RootScope()) {
		quads = patchQuadsGraph
	}
	return compileSkipHutchinson(n, k, seed, quads)
}

// NewSkipHutchinsonByGradient is NewSkipHutchinson with the residual's
// VJPs taken by graph.Gradient whatever the trunk: the reference the
// written-out patch network's are tested and timed against.
func NewSkipHutchinsonByGradient(n *access.Net, k int, seed uint64) (*SkipHutchinsonTrace, error) {
	return compileSkipHutchinson(n, k, seed, residualQuadsGraph)
}

func compileSkipHutchinson(n *access.Net, k int, seed uint64, quads func(*model.Scope, []*graph.Node) []*graph.Node) (*SkipHutchinsonTrace, error) {
	if k < 1 {
		return nil, fmt.Errorf("models: skip-hutchinson needs K ≥ 1 probes, got %d", k)
	}
	if n == nil || n.Store == nil || !HasNetwork(n.Store, MixtureScope) ||
		model.GetParamOr(n.Store.RootScope().At(ScoreScope), ParamSkip, SkipNone) != SkipMixture {
		return nil, fmt.Errorf("models: skip-hutchinson needs an ε-network with a mixture skip; this one has none (use hutchinson:%d)", k)
	}
	mix, err := MixtureSkipOf(n.Store)
	if err != nil {
		return nil, err
	}
	h := &SkipHutchinsonTrace{net: n, mix: mix, k: k, seed: seed, maxRows: access.DefaultMaxRows}
	if h.exec, err = model.NewExec(n.Backend, n.Store, quads); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return h, nil
}

// Name is the registered spec's: "skip-hutchinson-K".
func (h *SkipHutchinsonTrace) Name() string { return fmt.Sprintf("skip-hutchinson-%d", h.k) }

// SetMaxRows bounds the rows (points × probes) of one graph call; a call
// holds at least one group of a point's probes.
func (h *SkipHutchinsonTrace) SetMaxRows(n int) { h.maxRows = max(n, 1) }

// Probes is K, the probes a point.
func (h *SkipHutchinsonTrace) Probes() int { return h.k }

// Skip is the skip mixture, as MixtureSkipOf rebuilt it from the store.
func (h *SkipHutchinsonTrace) Skip() *mixture.Gaussian { return h.mix }

// EpsNet implements access.EpsTracer.
func (h *SkipHutchinsonTrace) EpsNet() *access.Net { return h.net }

// Trace implements score.TraceEstimator.
func (h *SkipHutchinsonTrace) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return h.TraceContext(context.Background(), c, x)
}

// TraceContext implements score.ContextTraceEstimator.
func (h *SkipHutchinsonTrace) TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	_, tr, err := h.EpsAndTraceContext(ctx, c, x)
	return tr, err
}

// EpsAndTraceContext implements access.EpsTracer: ε̂ [B, d] and the
// estimate [B], stopping between graph calls once ctx is done.
func (h *SkipHutchinsonTrace) EpsAndTraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) (*mat.Dense, []float64, error) {
	if x == nil {
		return nil, nil, fmt.Errorf("models: skip-hutchinson: no points: %w", mixture.ErrInput)
	}
	b, d := x.Dims()
	k := h.k
	if b*k > maxProbeValues/max(d, 1) {
		return nil, nil, fmt.Errorf("models: skip-hutchinson: %d points × %d probes × %d values is more than one call holds (%d values): %w",
			b, k, d, maxProbeValues, mixture.ErrInput)
	}
	probes := access.DrawProbes(access.Rademacher, h.seed, b, k, d) // point q's at rows q·K …
	sets := mat.NewDense(k*b, d, nil)                               // the mixture's order: point q's j-th at row j·B + q
	for q := range b {
		for j := range k {
			sets.SetRow(j*b+q, probes.RawRowView(q*k+j))
		}
	}
	res, err := h.mix.Eval(mixture.Query{At: c, X: x, V: sets, Want: mixture.Score | mixture.Trace | mixture.MatVec})
	if err != nil {
		return nil, nil, fmt.Errorf("models: skip-hutchinson: %w", err)
	}
	s2 := c.Sigma * c.Sigma
	y := mat.NewDense(b, d, nil) // the skip's denoiser (x + σ² s)/α
	for q := range b {
		yr, xr, sr := y.RawRowView(q), x.RawRowView(q), res.Score.RawRowView(q)
		for i := range yr {
			yr[i] = (xr[i] + s2*sr[i]) / c.Alpha
		}
	}
	u := mat.NewDense(b*k, d, nil) // (v − σ²F_mix v)/α, in the probes' order
	for q := range b {
		for j := range k {
			ur, vr, fv := u.RawRowView(q*k+j), probes.RawRowView(q*k+j), res.MatVec.RawRowView(j*b+q)
			for i := range ur {
				ur[i] = (vr[i] - s2*fv[i]) / c.Alpha
			}
		}
	}
	resid, quads, err := h.residual(ctx, c, x, y, probes, u)
	if err != nil {
		return nil, nil, err
	}
	eps := mat.NewDense(b, d, nil)
	tr := make([]float64, b)
	for q := range b {
		er, sr, rr := eps.RawRowView(q), res.Score.RawRowView(q), resid.RawRowView(q)
		for i := range er {
			er[i] = -c.Sigma*sr[i] + rr[i]
		}
		var sum float64
		for _, v := range quads[q*k : (q+1)*k] {
			sum += v
		}
		tr[q] = res.Trace[q] + sum/float64(k)
	}
	return eps, tr, nil
}

// maxProbeValues bounds the probe values (points × K × d) of one call: the
// probes, their F_mix v and u are three float64 arrays of this size (1.5 GB
// in all at the bound).
const maxProbeValues = 1 << 26

// residual runs residualQuadsGraph over x's points in calls of at most
// maxRows probe rows: the residual r [B, d] and the quadratic forms
// (Aᵀv)·v + (Bᵀv)·u over σ [B·K], in the probes' order.
func (h *SkipHutchinsonTrace) residual(ctx context.Context, c schedule.Coefficients, x, y, v, u *mat.Dense) (*mat.Dense, []float64, error) {
	b, d := x.Dims()
	k := h.k
	g := probeGroupOf(k)
	reps := k / g // a point's rows: its forward pass repeated for each group of g probes
	per := max(1, h.maxRows/k)
	dt := h.net.DType
	resid := mat.NewDense(b, d, nil)
	quads := make([]float64, 0, b*k)
	for start := 0; start < b; start += per {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		end := min(start+per, b)
		n := end - start
		xs, ys := mat.NewDense(n*reps, d, nil), mat.NewDense(n*reps, d, nil)
		for i := range n * reps {
			xs.SetRow(i, x.RawRowView(start+i/reps))
			ys.SetRow(i, y.RawRowView(start+i/reps))
		}
		out, err := h.exec.Exec(tensormat.FromMatrix(dt, xs), tensormat.FromMatrix(dt, ys),
			tensormat.FromMatrix(dt, v.Slice(start*k, end*k, 0, d)), tensormat.FromMatrix(dt, u.Slice(start*k, end*k, 0, d)),
			tensormat.Filled(dt, 1, c.Alpha), tensormat.Filled(dt, 1, c.Sigma))
		if err != nil {
			return nil, nil, fmt.Errorf("models: skip-hutchinson: %w", err)
		}
		r := tensormat.Values(out[0])
		for i := range n {
			copy(resid.RawRowView(start+i), r[i*reps*d:i*reps*d+d])
		}
		quads = append(quads, tensormat.Values(out[1])...)
	}
	return resid, quads, nil
}

// probeGroupOf is the probes a forward pass of the residual is shared by:
// the largest divisor of k up to 8 (each adds a backward pass to the
// graph; without the skip in the graph, a backward pass has no large
// operand to repack, and sharing always saves a forward pass).
func probeGroupOf(k int) int {
	for g := min(k, 8); g > 1; g-- {
		if k%g == 0 {
			return g
		}
	}
	return 1
}

// residualQuadsGraph is, for any trunk, the residual r(x, y) [R, d] of the store's
// ε-network (its trunk, the skip's denoiser y an input) and, for the g
// probes v of each row (v, u [R·g, d], row i's at i·g … i·g+g−1), the
// quadratic forms ((Aᵀv)·v + (Bᵀv)·u)/σ [R·g] by one VJP each, A = ∂r/∂x
// and B = ∂r/∂y; α, σ [1] (one time a call). Inputs x, y, v, u, α, σ.
func residualQuadsGraph(scope *model.Scope, in []*graph.Node) []*graph.Node {
	x, y, v, u := in[0], in[1], in[2], in[3]
	rows, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	g := v.Shape().Dimensions[0] / rows
	sigma := graph.BroadcastToDims(in[5], rows)
	r := trunk(scope.At(ScoreScope), Inputs{X: x, Alpha: graph.BroadcastToDims(in[4], rows), Sigma: sigma, Class: nullClass(scope, x)}, d, y, true)
	vs, us := graph.Reshape(v, rows, g, d), graph.Reshape(u, rows, g, d)
	probe := func(all *graph.Node, j int) *graph.Node {
		return graph.StopGradient(graph.Reshape(graph.Slice(all, graph.AxisRange(), graph.AxisRange(j, j+1)), rows, d))
	}
	quads := make([]*graph.Node, g)
	for j := range g {
		vj, uj := probe(vs, j), probe(us, j)
		grads := graph.Gradient(graph.ReduceAllSum(graph.Mul(r, vj)), x, y)
		q := graph.Add(graph.ReduceSum(graph.Mul(vj, grads[0]), -1), graph.ReduceSum(graph.Mul(uj, grads[1]), -1))
		quads[j] = graph.InsertAxes(q, -1) // [R, 1]
	}
	q := quads[0]
	if g > 1 {
		q = graph.Concatenate(quads, 1)
	}
	return []*graph.Node{r, graph.Reshape(graph.Div(q, graph.InsertAxes(sigma, -1)), rows*g)}
}
