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
	e := net.Eps(scope, x, alpha, sigma)
	return graph.Div(graph.Sub(x, graph.Mul(graph.InsertAxes(sigma, -1), e)), graph.InsertAxes(alpha, -1))
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

// DFTMTraceGraph is DF trace matching (eq. trace_appro) [R]:
// tr F ≈ d/σ² − (α²/σ⁴)(d·t_θ − ‖ȳ_θ‖²). net.T must not be nil.
func DFTMTraceGraph(net Network, scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	d := float64(x.Shape().Dimensions[1])
	ybar := DenoiserGraph(net, scope, x, alpha, sigma)
	s2 := graph.Square(sigma)
	c := graph.Div(graph.Square(alpha), graph.Square(s2))
	inner := graph.Sub(graph.MulScalar(net.T(scope, x, alpha, sigma), d), graph.ReduceSum(graph.Square(ybar), -1))
	return graph.Sub(graph.MulScalar(graph.Reciprocal(s2), d), graph.Mul(c, inner))
}

// DFTMCentredTraceGraph is centred DF trace matching (ours, see DFTMCentred)
// [R]: tr F ≈ (d/σ²)(1 − ν_θ). net.Nu must not be nil.
func DFTMCentredTraceGraph(net Network, scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	d := float64(x.Shape().Dimensions[1])
	nu := net.Nu(scope, x, alpha, sigma)
	return graph.MulScalar(graph.Div(graph.OneMinus(nu), graph.Square(sigma)), d)
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
