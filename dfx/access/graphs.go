package access

import (
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// The graph builders of the estimators, for use inside other graphs (e.g. an
// adjoint-guidance step). Shapes: x, x0, v [R, d]; alpha, sigma [R] (the
// schedule's α(t), σ(t) of each row); rows never interact.

// DenoiserGraph is ȳ_θ = (x − σ ε_θ)/α [R, d] (paper Prop. optimal_y).
func DenoiserGraph(net Network, scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	return DenoiserFromEpsGraph(x, net.Eps(scope, x, alpha, sigma), alpha, sigma)
}

// DenoiserFromEpsGraph is Tweedie's ȳ = (x − σ ε)/α [R, d] for x, eps [R, d]
// (the graph twin of score.DenoiserFromEps).
func DenoiserFromEpsGraph(x, eps, alpha, sigma *graph.Node) *graph.Node {
	return graph.Div(graph.Sub(x, graph.Mul(graph.InsertAxes(sigma, -1), eps)), graph.InsertAxes(alpha, -1))
}

// EpsFromDenoiserGraph is ε = (x − α ȳ)/σ [R, d] for x, ybar [R, d] (the
// graph twin of score.EpsFromDenoiser).
func EpsFromDenoiserGraph(x, ybar, alpha, sigma *graph.Node) *graph.Node {
	return graph.Div(graph.Sub(x, graph.Mul(graph.InsertAxes(alpha, -1), ybar)), graph.InsertAxes(sigma, -1))
}

// GuidedEpsGraph is classifier-free guidance (Ho & Salimans 2022) in the
// one scale convention of the repository, per row,
//
//	ε̃ = ε_∅ + s (ε_c − ε_∅)   [R, d],
//
// for the conditional and unconditional predictions cond, uncond [R, d]
// and the scales s [R]: s = 0 is the unconditional model, s = 1 the
// conditional one, s > 1 guides (the paper's "guidance scale" is s).
func GuidedEpsGraph(cond, uncond, scale *graph.Node) *graph.Node {
	return graph.Add(uncond, graph.Mul(graph.InsertAxes(scale, -1), graph.Sub(cond, uncond)))
}

// VJPMatVecGraph is the network's Fisher applied to v by one VJP (eq.
// Adjoint_VJP): F v ≈ (1/σ) ∂⟨ε_θ(x), v⟩/∂x [R, d], row-wise; v is held
// constant (no gradient flows into it).
func VJPMatVecGraph(net Network, scope *model.Scope, x, v, alpha, sigma *graph.Node) *graph.Node {
	e := net.Eps(scope, x, alpha, sigma)
	jv := graph.Gradient(graph.ReduceAllSum(graph.Mul(e, graph.StopGradient(v))), x)[0]
	return graph.Div(jv, graph.InsertAxes(sigma, -1))
}

// VJPQuadGraph is the quadratic form vᵀ F v [R] by one VJP (eq. nll_VJP
// with v a basis vector, Hutchinson with v a probe).
func VJPQuadGraph(net Network, scope *model.Scope, x, v, alpha, sigma *graph.Node) *graph.Node {
	return graph.ReduceSum(graph.Mul(v, VJPMatVecGraph(net, scope, x, v, alpha, sigma)), -1)
}

// VJPQuadsGraph is the quadratic forms vᵀ F v [R·K] of k vectors per row,
// by one forward pass and k VJPs: x [R, d]; v [R·k, d], row r's vectors at
// rows r·k … r·k+k−1; alpha, sigma [R]. It equals VJPQuadGraph on x's rows
// each repeated k times, without repeating their forward pass (a quarter of
// a VJP's work at k = 4).
func VJPQuadsGraph(net Network, scope *model.Scope, x, v, alpha, sigma *graph.Node, k int) *graph.Node {
	r, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	e := net.Eps(scope, x, alpha, sigma)
	vs := graph.Reshape(v, r, k, d)
	quads := make([]*graph.Node, k)
	for j := range k {
		vj := graph.StopGradient(graph.Reshape(graph.Slice(vs, graph.AxisRange(), graph.AxisRange(j, j+1)), r, d))
		jv := graph.Gradient(graph.ReduceAllSum(graph.Mul(e, vj)), x)[0]
		quads[j] = graph.InsertAxes(graph.ReduceSum(graph.Mul(vj, jv), -1), -1) // [R, 1]
	}
	q := quads[0]
	if k > 1 {
		q = graph.Concatenate(quads, 1)
	}
	return graph.Reshape(graph.Div(q, graph.InsertAxes(sigma, -1)), r*k)
}

// DFTMTraceGraph is DF trace matching (eq. trace_appro) [R]:
// tr F ≈ d/σ² − (α²/σ⁴)(d·t_θ − ‖ȳ_θ‖²). net.T must not be nil.
func DFTMTraceGraph(net Network, scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	ybar := DenoiserGraph(net, scope, x, alpha, sigma)
	return DFTMTraceOf(ybar, net.T(scope, x, alpha, sigma), alpha, sigma)
}

// DFTMTraceOf is eq. trace_appro from its ingredients: the denoiser ybar
// [R, d] and the DF-TM scalar t [R], tr F ≈ d/σ² − (α²/σ⁴)(d·t − ‖ȳ‖²) [R]
// (for a graph that has computed ε_θ already, e.g. beside the score).
func DFTMTraceOf(ybar, t, alpha, sigma *graph.Node) *graph.Node {
	d := float64(ybar.Shape().Dimensions[1])
	s2 := graph.Square(sigma)
	c := graph.Div(graph.Square(alpha), graph.Square(s2))
	inner := graph.Sub(graph.MulScalar(t, d), graph.ReduceSum(graph.Square(ybar), -1))
	return graph.Sub(graph.MulScalar(graph.Reciprocal(s2), d), graph.Mul(c, inner))
}

// DFTMCentredTraceGraph is centred DF trace matching (ours, see DFTMCentred)
// [R]: tr F ≈ (d/σ²)(1 − ν_θ). net.Nu must not be nil.
func DFTMCentredTraceGraph(net Network, scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	return DFTMCentredTraceOf(net.Nu(scope, x, alpha, sigma), sigma, x.Shape().Dimensions[1])
}

// DFTMCentredTraceOf is the centred DF-TM trace (d/σ²)(1 − ν) [R] from the
// scalar ν [R] in dimension d.
func DFTMCentredTraceOf(nu, sigma *graph.Node, d int) *graph.Node {
	return graph.MulScalar(graph.Div(graph.OneMinus(nu), graph.Square(sigma)), float64(d))
}

// DFEAMatVecGraph is DF endpoint approximation (eq. EA_approx) [R, d]:
// F v ≈ v/σ² − (α²/σ⁴)⟨x₀,v⟩x₀ + (α²/σ⁴)⟨ȳ_θ,v⟩ȳ_θ, with x₀ the endpoint of
// each row (in adjoint guidance, the x₀ predicted by the step's inner solve).
func DFEAMatVecGraph(net Network, scope *model.Scope, x, x0, v, alpha, sigma *graph.Node) *graph.Node {
	ybar := DenoiserGraph(net, scope, x, alpha, sigma)
	s2 := graph.InsertAxes(graph.Square(sigma), -1)
	c := graph.Div(graph.Square(graph.InsertAxes(alpha, -1)), graph.Square(s2))
	dot := func(a, b *graph.Node) *graph.Node { return graph.InsertAxes(graph.ReduceSum(graph.Mul(a, b), -1), -1) }
	rank2 := graph.Sub(graph.Mul(dot(ybar, v), ybar), graph.Mul(dot(x0, v), x0))
	return graph.Add(graph.Div(v, s2), graph.Mul(c, rank2))
}
