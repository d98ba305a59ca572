package access

import (
	"errors"
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// denoiserGraph is ȳ_θ = (x − σ ε_θ)/α [R,d].
func denoiserGraph(n *Net, ctx *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	e := n.Eps(ctx, x, alpha, sigma)
	return graph.Div(graph.Sub(x, graph.Mul(graph.InsertAxes(sigma, -1), e)), graph.InsertAxes(alpha, -1))
}

// DFTM is DF trace matching (eq. trace_appro): one forward pass of ε_θ and
// t_θ, tr F ≈ d/σ² − (α²/σ⁴)(d·t_θ − ‖ȳ_θ‖²).
type DFTM struct {
	net  *Net
	exec *model.Exec
}

// NewDFTM compiles the estimator; the Net must have a T network.
func NewDFTM(n *Net) (*DFTM, error) {
	if n.T == nil {
		return nil, errors.New("access: DF-TM needs a trace network (Net.T)")
	}
	e, err := n.exec(func(ctx *model.Scope, in []*graph.Node) *graph.Node {
		x, alpha, sigma := in[0], in[1], in[2]
		d := float64(x.Shape().Dimensions[1])
		ybar := denoiserGraph(n, ctx, x, alpha, sigma)
		s2 := graph.Square(sigma)
		c := graph.Div(graph.Square(alpha), graph.Square(s2))
		inner := graph.Sub(graph.MulScalar(n.T(ctx, x, alpha, sigma), d), graph.ReduceSum(graph.Square(ybar), -1))
		return graph.Sub(graph.MulScalar(graph.Reciprocal(s2), d), graph.Mul(c, inner))
	})
	return &DFTM{n, e}, err
}

func (*DFTM) Name() string { return "df-tm" }

func (e *DFTM) Trace(x [][]float64, t float64) ([]float64, error) {
	return e.net.scalarAt(e.exec, x, t)
}

// scalarAt runs a compiled per-query scalar graph of (x, α, σ) at time t.
func (n *Net) scalarAt(exec *model.Exec, x [][]float64, t float64) ([]float64, error) {
	b, _, a, s, err := n.batchAt(x, nil, t)
	if err != nil {
		return nil, err
	}
	dt := n.DType
	res, err := exec.Exec(matrix(dt, x), filled(dt, b, a), filled(dt, b, s))
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return flat(res[0]), nil
}

// EndpointFn supplies the endpoint x₀ used by DF-EA for queries x at time t
// (in adjoint guidance, the x₀ predicted by the guidance step's inner solve).
type EndpointFn func(x [][]float64, t float64) ([][]float64, error)

// DFEA is DF endpoint approximation (eq. EA_approx): one forward pass of ε_θ,
// F v ≈ v/σ² − (α²/σ⁴)⟨x₀,v⟩x₀ + (α²/σ⁴)⟨ȳ_θ,v⟩ȳ_θ. Its MatVec takes x₀ from
// Endpoint; MatVecAt takes it explicitly.
type DFEA struct {
	net      *Net
	exec     *model.Exec
	Endpoint EndpointFn
}

// NewDFEA compiles the operator; endpoint may be nil if only MatVecAt is used.
func NewDFEA(n *Net, endpoint EndpointFn) (*DFEA, error) {
	e, err := n.exec(func(ctx *model.Scope, in []*graph.Node) *graph.Node {
		x, x0, v, alpha, sigma := in[0], in[1], in[2], in[3], in[4]
		ybar := denoiserGraph(n, ctx, x, alpha, sigma)
		s2 := graph.InsertAxes(graph.Square(sigma), -1)
		c := graph.Div(graph.Square(graph.InsertAxes(alpha, -1)), graph.Square(s2))
		dot := func(a, b *graph.Node) *graph.Node { return graph.InsertAxes(graph.ReduceSum(graph.Mul(a, b), -1), -1) }
		rank2 := graph.Sub(graph.Mul(dot(ybar, v), ybar), graph.Mul(dot(x0, v), x0))
		return graph.Add(graph.Div(v, s2), graph.Mul(c, rank2))
	})
	return &DFEA{n, e, endpoint}, err
}

func (*DFEA) Name() string { return "df-ea" }

func (e *DFEA) MatVec(x [][]float64, t float64, v [][]float64) ([][]float64, error) {
	if e.Endpoint == nil {
		return nil, errors.New("access: DF-EA MatVec needs an Endpoint function (or call MatVecAt)")
	}
	x0, err := e.Endpoint(x, t)
	if err != nil {
		return nil, err
	}
	return e.MatVecAt(x, x0, t, v)
}

// MatVecAt is MatVec with explicit endpoints x0 [B][d].
func (e *DFEA) MatVecAt(x, x0 [][]float64, t float64, v [][]float64) ([][]float64, error) {
	b, d, a, s, err := e.net.batchAt(x, v, t)
	if err != nil {
		return nil, err
	}
	if _, _, err := checkBatch(x, x0); err != nil {
		return nil, fmt.Errorf("access: endpoints: %w", err)
	}
	dt := e.net.DType
	res, err := e.exec.Exec(matrix(dt, x), matrix(dt, x0), matrix(dt, v), filled(dt, b, a), filled(dt, b, s))
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return rowsOf(flat(res[0]), d), nil
}
