package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// DFTM is DF trace matching (eq. trace_appro): one forward pass of ε_θ and
// t_θ,
//
//	tr F_DFTM = d/σ² − (α²/σ⁴)(d·t_θ − ‖ȳ_θ‖²),   ȳ_θ = (x − σ ε_θ)/α.
//
// Error bound. The exact trace is tr F = d/σ² − (α²/σ⁴)(d·t* − ‖ȳ‖²) with
// t* = Σᵢ wᵢ‖yᵢ‖²/d and ȳ = Σᵢ wᵢ yᵢ (eq. trace_matching, Prop.
// optimal_t), so the error is exactly
//
//	tr F_DFTM − tr F = (α²/σ⁴)[d(t* − t_θ) + (‖ȳ_θ‖² − ‖ȳ‖²)].
//
// With δ₁ = |t_θ − t*| and δ₂ = ‖ȳ_θ − ȳ‖ (= (σ/α)‖ε_θ − ε*‖), and
// ‖ȳ_θ‖² − ‖ȳ‖² = ⟨ȳ_θ − ȳ, 2ȳ + (ȳ_θ − ȳ)⟩,
//
//	|tr F_DFTM − tr F| ≤ (α²/σ⁴)(d·δ₁ + δ₂(2‖ȳ‖ + δ₂))   (DFTMErrorBound),
//
// with equality when t_θ < t* and ȳ_θ − ȳ is a positive multiple of ȳ. The
// paper's Prop. error_bound_trace states (α²/σ⁴)δ₁ + δ₂'²/σ² with δ₂' the ε
// error, i.e. (α²/σ⁴)(δ₁ + δ₂²) in these terms: it lacks the factor d on δ₁
// and uses |‖a‖² − ‖b‖²| ≤ ‖a − b‖², which is false. E.g. for a single Dirac
// at ‖y‖ = 1 with δ₁ = 0 and δ₂ = 10⁻³ at σ = 0.1 (α ≈ 1), the error is
// ≈ 20 while the printed bound is 0.01. Note the factor α²/σ⁴: DF-TM's
// error blows up at small σ unless δ₁ and δ₂ shrink like σ⁴ (DFTMCentred
// is our variant without the cancellation).
type DFTM struct{ scalarTrace }

// DFTMErrorBound is the bound (α²/σ⁴)(d·δ₁ + δ₂(2‖ȳ‖ + δ₂)) on |tr F_DFTM −
// tr F| derived in DFTM's comment: δ₁ = |t_θ − t*|, δ₂ = ‖ȳ_θ − ȳ‖, ybarNorm
// = ‖ȳ‖ of the exact denoiser.
func DFTMErrorBound(d int, alpha, sigma, delta1, delta2, ybarNorm float64) float64 {
	s2 := sigma * sigma
	return alpha * alpha / (s2 * s2) * (float64(d)*delta1 + delta2*(2*ybarNorm+delta2))
}

// NewDFTM compiles the estimator; the Net must have a T network.
func NewDFTM(n *Net) (*DFTM, error) {
	if n.T == nil {
		return nil, errors.New("access: DF-TM needs a trace network (Net.T)")
	}
	st, err := newScalarTrace(n, "df-tm", DFTMTraceGraph, dftmFromEps)
	return &DFTM{st}, err
}

// scalarTrace is a trace estimator that is one compiled graph of (x, α, σ)
// per query row: DF-TM, the centred DF-TM. fromEps builds the same trace
// from an ε_θ already in the graph, for NetModel's Fused evaluation.
type scalarTrace struct {
	name    string
	net     *Net
	exec    *model.Exec
	fromEps func(net Network, scope *model.Scope, x, eps, alpha, sigma *graph.Node) *graph.Node
	fused   *model.Exec // ε_θ and the trace in one graph, compiled on first use
}

func newScalarTrace(n *Net, name string, build func(Network, *model.Scope, *graph.Node, *graph.Node, *graph.Node) *graph.Node,
	fromEps func(Network, *model.Scope, *graph.Node, *graph.Node, *graph.Node, *graph.Node) *graph.Node) (scalarTrace, error) {
	e, err := n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
		return build(n.Network, scope, in[0], rowTimes(in[1], in[0]), rowTimes(in[2], in[0]))
	})
	return scalarTrace{name: name, net: n, exec: e, fromEps: fromEps}, err
}

func (e scalarTrace) Name() string { return e.name }

func (e scalarTrace) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return e.net.scalarAt(e.exec, c, x)
}

// epsAndTrace is ε_θ(x) [B, d] and the trace [B] at c from one graph: one
// pass of ε_θ where Net.EpsAt and Trace take two.
func (e *scalarTrace) epsAndTrace(c schedule.Coefficients, x *mat.Dense) (*mat.Dense, []float64, error) {
	b, d, err := checkAt(c, x, nil)
	if err != nil {
		return nil, nil, err
	}
	n := e.net
	if e.fused == nil {
		if e.fused, err = model.NewExec(n.Backend, n.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			x := in[0]
			a, s := rowTimes(in[1], x), rowTimes(in[2], x)
			eps := n.Eps(scope, x, a, s)
			return []*graph.Node{eps, e.fromEps(n.Network, scope, x, eps, a, s)}
		}); err != nil {
			return nil, nil, err
		}
	}
	dt := n.DType
	alpha, sigma := timesOf(dt, c)
	out, err := e.fused.Exec(tensormat.FromMatrix(dt, x), alpha, sigma)
	if err != nil {
		return nil, nil, fmt.Errorf("access: %w", err)
	}
	return tensormat.Dense(out[0], b, d), tensormat.Values(out[1]), nil
}

// netOf is the Net the estimator runs on.
func (e *scalarTrace) netOf() *Net { return e.net }

// dftmFromEps is eq. trace_appro with ε_θ given: ȳ_θ by Tweedie, t_θ by the network.
func dftmFromEps(net Network, scope *model.Scope, x, eps, alpha, sigma *graph.Node) *graph.Node {
	return DFTMTraceOf(DenoiserFromEpsGraph(x, eps, alpha, sigma), net.T(scope, x, alpha, sigma), alpha, sigma)
}

// dftmCentredFromEps is the centred DF-TM trace, which needs ν_θ alone.
func dftmCentredFromEps(net Network, scope *model.Scope, x, _, alpha, sigma *graph.Node) *graph.Node {
	return DFTMCentredTraceOf(net.Nu(scope, x, alpha, sigma), sigma, x.Shape().Dimensions[1])
}

// DFTMCentred is centred DF trace matching, our variant of DF-TM (beyond the
// paper). The scalar network ν_θ(x_t, t) is regressed on the per-sample DSM
// error of the frozen score network, ‖ε̂_θ − ε‖²/d = (α²/σ²)‖x₀ − ȳ_θ‖²/d
// (the DFTMCentred objective of the models package); its optimum is (α²/σ²)(tr Cov[x₀|x_t] + ‖ȳ − ȳ_θ‖²)/d,
// and since tr F = d/σ² − (α²/σ⁴) tr Cov[x₀|x_t] (Prop.
// trace_matching),
//
//	tr F ≈ (d/σ²)(1 − ν_θ),
//
// one forward pass of ν_θ alone. The paper's DF-TM gets the posterior
// variance as d·t_θ − ‖ȳ_θ‖², a small difference of two large numbers
// multiplied by α²/σ⁴; here ν_θ is that variance already scaled to O(1), so
// a 1% error in ν_θ is at most a 1% error in the trace's deficit from d/σ².
// Its bias is one-signed: ν_θ* ≥ ν, so the trace is underestimated by
// (α²/σ⁴)‖ȳ − ȳ_θ‖², the score network's own error.
type DFTMCentred struct{ scalarTrace }

// NewDFTMCentred compiles the estimator; the Net must have a ν network.
func NewDFTMCentred(n *Net) (*DFTMCentred, error) {
	if n.Nu == nil {
		return nil, errors.New("access: centred DF-TM needs a centred trace network (Net.Nu)")
	}
	st, err := newScalarTrace(n, "df-tm-c", DFTMCentredTraceGraph, dftmCentredFromEps)
	return &DFTMCentred{st}, err
}

// Fused evaluates, in one graph, ε_θ and the DF-TM and centred DF-TM
// traces of a Net at (x, c): the likelihood ODE with DF-TM then costs one
// ε-network and one t_θ pass per evaluation, not two ε passes.
type Fused struct {
	net  *Net
	exec *model.Exec
}

// NewFused compiles net's fused graph (net needs t_θ and ν_θ).
func NewFused(net *Net) (*Fused, error) {
	e, err := model.NewExec(net.Backend, net.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		x := in[0]
		a, s := rowTimes(in[1], x), rowTimes(in[2], x)
		eps := net.Eps(scope, x, a, s)
		ybar := DenoiserFromEpsGraph(x, eps, a, s)
		dftm := DFTMTraceOf(ybar, net.T(scope, x, a, s), a, s)
		nu := DFTMCentredTraceOf(net.Nu(scope, x, a, s), s, x.Shape().Dimensions[1])
		return []*graph.Node{eps, dftm, nu}
	})
	if err != nil {
		return nil, err
	}
	return &Fused{net: net, exec: e}, nil
}

// Eval returns ε_θ [B, d] and the DF-TM and centred DF-TM traces [B] at
// the rows of x [B, d].
func (f *Fused) Eval(c schedule.Coefficients, x *mat.Dense) (eps *mat.Dense, dftm, dftmc []float64, err error) {
	b, d := x.Dims()
	alpha, sigma := timesOf(dtypes.Float32, c)
	out, err := f.exec.Exec(tensormat.FromMatrix(dtypes.Float32, x), alpha, sigma)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("access: fused: %w", err)
	}
	return tensormat.Dense(out[0], b, d), tensormat.Values(out[1]), tensormat.Values(out[2]), nil
}

// FusedTrace selects the trace of a FusedModel.
type FusedTrace int

const (
	FusedDFTM      FusedTrace = iota // DF-TM from the fused graph
	FusedDFTMC                       // centred DF-TM from the fused graph
	FusedEstimator                   // the FusedModel's Est (VJP, Hutchinson, Hutch++)
)

// FusedModel is a Fused network with one trace as a score.Model: ε native,
// tr F from the fused graph or from Est.
type FusedModel struct {
	F     *Fused
	Trace FusedTrace
	Est   score.TraceEstimator
}

// Eval implements score.Model.
func (m FusedModel) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return m.EvalContext(context.Background(), c, x, want)
}

// EvalContext implements score.ContextModel: a trace estimator's trace
// stops between its graph calls once ctx is done.
func (m FusedModel) EvalContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	if want&score.WantFisher != 0 {
		return nil, fmt.Errorf("access: the network model has no Fisher matrices")
	}
	eps, tr, nu, err := m.F.Eval(c, x)
	if err != nil {
		return nil, err
	}
	switch m.Trace {
	case FusedDFTMC:
		tr = nu
	case FusedEstimator:
		if tr, err = score.TraceContext(ctx, m.Est, c, x); err != nil {
			return nil, err
		}
	}
	ev := &score.Eval{Eps: eps, Trace: tr}
	return ev, ev.Fill(c, x, want)
}

var _ score.ContextModel = FusedModel{}

// DFEA is DF endpoint approximation (eq. EA_approx), the Fisher of Prop.
// analytic_dirac, I/σ² − (α²/σ⁴)(Σ wᵢyᵢyᵢᵀ − ȳȳᵀ), with the posterior
// second moment replaced by the endpoint's outer product x̂₀x̂₀ᵀ:
//
//	F v ≈ v/σ² − (α²/σ⁴)⟨x̂₀,v⟩x̂₀ + (α²/σ⁴)⟨ȳ,v⟩ȳ.
//
// Apply takes x̂₀ from State.Endpoint. With State.Denoiser set (a sampler
// that has computed ȳ, e.g. an adjoint-guidance inner step) it is the host
// formula DFEAApply, O(B·d) and no network pass: the zero DFEA does this.
// Without it, ȳ_θ comes from the network in the same compiled graph
// (DFEAMatVecGraph), which needs a DFEA from NewDFEA.
type DFEA struct {
	net  *Net
	exec *model.Exec
}

// NewDFEA compiles the operator's graph on a network.
func NewDFEA(n *Net) (*DFEA, error) {
	e, err := n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
		return DFEAMatVecGraph(n.Network, scope, in[0], in[1], in[2], rowTimes(in[3], in[0]), rowTimes(in[4], in[0]))
	})
	return &DFEA{n, e}, err
}

// Name implements score.FisherOperator.
func (DFEA) Name() string { return "df-ea" }

// Apply implements score.FisherOperator.
func (e DFEA) Apply(s score.State, v *mat.Dense) (*mat.Dense, error) {
	if s.Endpoint == nil {
		return nil, errors.New("access: DF-EA needs the endpoints x̂₀ (State.Endpoint)")
	}
	if s.Denoiser != nil {
		return DFEAApply(s.Denoiser, s.Endpoint, v, s.At.Alpha, s.At.Sigma)
	}
	if e.exec == nil {
		return nil, errors.New("access: DF-EA without the state's denoiser needs a network (NewDFEA)")
	}
	b, d, err := checkAt(s.At, s.X, v)
	if err != nil {
		return nil, err
	}
	if _, _, err := checkBatch(s.X, s.Endpoint); err != nil {
		return nil, fmt.Errorf("access: endpoints: %w", err)
	}
	dt := e.net.DType
	alpha, sigma := timesOf(dt, s.At)
	res, err := e.exec.Exec(tensormat.FromMatrix(dt, s.X), tensormat.FromMatrix(dt, s.Endpoint), tensormat.FromMatrix(dt, v), alpha, sigma)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return tensormat.Dense(res[0], b, d), nil
}

// DFEAApply is DF-EA (eq. EA_approx) on the host from a denoiser output
// already at hand: F v ≈ v/σ² + (α²/σ⁴)(⟨ȳ,v⟩ȳ − ⟨x₀,v⟩x₀) for each row of
// ybar, x0, v [B, d]. Inside a sampler step that has computed ȳ_θ, this is
// DF-EA's whole marginal cost: O(B·d) operations and no network pass.
func DFEAApply(ybar, x0, v *mat.Dense, alpha, sigma float64) (*mat.Dense, error) {
	b, d := v.Dims()
	if rb, rd := ybar.Dims(); rb != b || rd != d {
		return nil, fmt.Errorf("access: DF-EA: ȳ is [%d, %d], v is [%d, %d]", rb, rd, b, d)
	}
	if rb, rd := x0.Dims(); rb != b || rd != d {
		return nil, fmt.Errorf("access: DF-EA: x₀ is [%d, %d], v is [%d, %d]", rb, rd, b, d)
	}
	s2 := sigma * sigma
	c := alpha * alpha / (s2 * s2)
	out := mat.NewDense(b, d, nil)
	for i := range b {
		y, x, vv, o := ybar.RawRowView(i), x0.RawRowView(i), v.RawRowView(i), out.RawRowView(i)
		var yv, xv float64
		for j := range d {
			yv += y[j] * vv[j]
			xv += x[j] * vv[j]
		}
		cy, cx := c*yv, c*xv
		for j := range d {
			o[j] = vv[j]/s2 + cy*y[j] - cx*x[j]
		}
	}
	return out, nil
}

// DFEAMatrix is the d×d matrix that DF-EA applies at one point,
// I/σ² − (α²/σ⁴)(x̂₀x̂₀ᵀ − ȳȳᵀ), for the endpoint x0 and denoiser ybar [d].
func DFEAMatrix(c schedule.Coefficients, x0, ybar []float64) *mat.Dense {
	d := len(x0)
	s2 := c.Sigma * c.Sigma
	k := c.Alpha * c.Alpha / (s2 * s2)
	m := mat.NewDense(d, d, nil)
	for r := range d {
		row := m.RawRowView(r)
		for j := range d {
			row[j] = -k * (x0[r]*x0[j] - ybar[r]*ybar[j])
		}
		row[r] += 1 / s2
	}
	return m
}

// DFEAErrorBound bounds ‖F − F_EA‖_HS at one point (Prop. error_bound_ea,
// in the form the exact-operator studies check): with D ≥ ‖yᵢ‖ for every
// data point and ≥ ‖x̂₀‖, δ = ‖ŷ − ȳ‖ the error of the denoiser DF-EA used
// (ŷ) against the exact one (ȳ),
//
//	‖F − F_EA‖_HS ≤ (α²/σ⁴)(2D² + δ(‖ȳ‖ + ‖ŷ‖)),
//
// since Σ wᵢyᵢyᵢᵀ and x̂₀x̂₀ᵀ have HS norms ≤ D² and ȳȳᵀ − ŷŷᵀ = ȳ(ȳ − ŷ)ᵀ +
// (ȳ − ŷ)ŷᵀ.
func DFEAErrorBound(c schedule.Coefficients, dmax, delta, ybarNorm, yhatNorm float64) float64 {
	s2 := c.Sigma * c.Sigma
	return c.Alpha * c.Alpha / (s2 * s2) * (2*dmax*dmax + delta*(ybarNorm+yhatNorm))
}

// OperatorMatrix is, for each of the B points of s, the d×d matrix whose
// row j is op(x_b) e_j, by one batched Apply on the basis vectors (the
// matrix's transpose; equal to it for a symmetric operator).
func OperatorMatrix(op score.FisherOperator, s score.State) ([]*mat.Dense, error) {
	b, d := s.X.Dims()
	rep := func(m *mat.Dense) *mat.Dense {
		if m == nil {
			return nil
		}
		out := mat.NewDense(b*d, d, nil)
		for i := range b {
			for j := range d {
				out.SetRow(i*d+j, m.RawRowView(i))
			}
		}
		return out
	}
	v := mat.NewDense(b*d, d, nil)
	for i := range b {
		for j := range d {
			v.Set(i*d+j, j, 1)
		}
	}
	big := score.State{At: s.At, X: rep(s.X), Denoiser: rep(s.Denoiser), Endpoint: rep(s.Endpoint)}
	fv, err := op.Apply(big, v)
	if err != nil {
		return nil, err
	}
	out := make([]*mat.Dense, b)
	for i := range b {
		out[i] = mat.DenseCopyOf(fv.Slice(i*d, (i+1)*d, 0, d))
	}
	return out, nil
}
