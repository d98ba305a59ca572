package access

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// Mixture is the Dirac mixture q₀ = (1/N) Σᵢ δ(x − yᵢ) as GoMLX graphs: with
// wᵢ = softmaxᵢ(−‖x − α yᵢ‖²/(2σ²)) and ȳ = Σ wᵢ yᵢ (Prop. analytic_dirac),
//
//	ε = (x − α ȳ)/σ,   score = −ε/σ,
//	F = I/σ² − (α²/σ⁴)(Σ wᵢ yᵢyᵢᵀ − ȳȳᵀ),   tr F = d/σ² − (α²/σ⁴)(Σ wᵢ‖yᵢ‖² − ‖ȳ‖²).
//
// Its Eps is an exact "network" for the VJP estimators; Net() bundles it.
// Mixture itself is a score.TraceEstimator and score.FisherOperator (closed
// forms).
type Mixture struct {
	net         *Net
	n, d        int
	trace, mvec *model.Exec
	yVar, y2Var *model.Variable
}

// NewMixture stores the points y [N, d] as non-trainable variables of a new
// store and compiles the closed forms.
func NewMixture(backend compute.Backend, s schedule.Schedule, dtype dtypes.DType, y *mat.Dense) (*Mixture, error) {
	n, d, err := checkBatch(y, nil)
	if err != nil {
		return nil, fmt.Errorf("access: mixture points: %w", err)
	}
	m := &Mixture{n: n, d: d}
	store := model.NewStore()
	m.yVar = store.Scope("/mixture").VariableWithValue("y", tensormat.FromMatrix(dtype, y)).SetTrainable(false)
	norms := make([]float64, n)
	for i := range n {
		for _, v := range tensormat.Row(y, i) {
			norms[i] += v * v
		}
	}
	m.y2Var = store.Scope("/mixture").VariableWithValue("y2", tensormat.FromMatrix(dtype, mat.NewDense(1, n, norms))).SetTrainable(false)
	m.net = NewNet(backend, store, s, dtype, Network{Eps: m.Eps, T: m.T, Nu: m.Nu})
	if m.trace, err = m.net.exec(func(_ *model.Scope, in []*graph.Node) *graph.Node {
		return m.traceGraph(in[0], rowTimes(in[1], in[0]), rowTimes(in[2], in[0]))
	}); err != nil {
		return nil, err
	}
	if m.mvec, err = m.net.exec(func(_ *model.Scope, in []*graph.Node) *graph.Node {
		return m.matVecGraph(in[0], in[1], rowTimes(in[2], in[0]), rowTimes(in[3], in[0]))
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// Net is the mixture as a network (ε, DF-TM t and centred ν), for the other estimators.
func (m *Mixture) Net() *Net { return m.net }

// posterior returns w [R,N], ȳ [R,d] and Σ wᵢ‖yᵢ‖² [R] at rows x [R,d].
func (m *Mixture) posterior(x, alpha, sigma *graph.Node) (w, ybar, wy2 *graph.Node) {
	g := x.Graph()
	y, y2 := m.yVar.NodeValue(g), m.y2Var.NodeValue(g) // [N,d], [1,N]
	a, s2 := graph.InsertAxes(alpha, -1), graph.InsertAxes(graph.Square(sigma), -1)
	// −‖x − α yᵢ‖²/(2σ²) up to the row constant −‖x‖²/(2σ²), which softmax ignores.
	xy := graph.DotGeneral(x, []int{1}, nil, y, []int{1}, nil) // [R,N]
	logits := graph.Div(graph.Sub(graph.Mul(a, xy), graph.MulScalar(graph.Mul(graph.Square(a), y2), 0.5)), s2)
	w = graph.Softmax(logits, -1)
	ybar = graph.MatMul(w, y)
	wy2 = graph.ReduceSum(graph.Mul(w, y2), -1)
	return
}

// Eps is the exact ε = (x − α ȳ)/σ; its autodiff is the exact Fisher times σ.
func (m *Mixture) Eps(_ *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	_, ybar, _ := m.posterior(x, alpha, sigma)
	return EpsFromDenoiserGraph(x, ybar, alpha, sigma)
}

// T is the exact DF-TM target Σ wᵢ‖yᵢ‖²/d (Prop. optimal_t).
func (m *Mixture) T(_ *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	_, _, wy2 := m.posterior(x, alpha, sigma)
	return graph.DivScalar(wy2, float64(m.d))
}

// Nu is the exact centred DF-TM target (α²/σ²) tr Cov[x₀|x_t]/d
// = (α²/σ²)(Σ wᵢ‖yᵢ‖² − ‖ȳ‖²)/d, the optimum of ν_θ with the exact denoiser.
func (m *Mixture) Nu(_ *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
	_, ybar, wy2 := m.posterior(x, alpha, sigma)
	spread := graph.Sub(wy2, graph.ReduceSum(graph.Square(ybar), -1))
	return graph.DivScalar(graph.Mul(graph.Square(graph.Div(alpha, sigma)), spread), float64(m.d))
}

func (m *Mixture) traceGraph(x, alpha, sigma *graph.Node) *graph.Node {
	_, ybar, wy2 := m.posterior(x, alpha, sigma)
	s2 := graph.Square(sigma)
	c := graph.Div(graph.Square(alpha), graph.Square(s2))
	spread := graph.Sub(wy2, graph.ReduceSum(graph.Square(ybar), -1))
	return graph.Sub(graph.DivScalar(graph.Reciprocal(s2), 1/float64(m.d)), graph.Mul(c, spread))
}

func (m *Mixture) matVecGraph(x, v, alpha, sigma *graph.Node) *graph.Node {
	w, ybar, _ := m.posterior(x, alpha, sigma)
	y := m.yVar.NodeValue(x.Graph())
	yv := graph.DotGeneral(v, []int{1}, nil, y, []int{1}, nil)                             // [R,N]: yᵢ·v
	second := graph.MatMul(graph.Mul(w, yv), y)                                            // Σ wᵢ yᵢ (yᵢ·v)
	mean := graph.Mul(ybar, graph.InsertAxes(graph.ReduceSum(graph.Mul(ybar, v), -1), -1)) // ȳ (ȳ·v)
	s2 := graph.InsertAxes(graph.Square(sigma), -1)
	c := graph.Div(graph.Square(graph.InsertAxes(alpha, -1)), graph.Square(s2))
	return graph.Sub(graph.Div(v, s2), graph.Mul(c, graph.Sub(second, mean)))
}

func (*Mixture) Name() string { return "exact" }

// Trace implements score.TraceEstimator: the closed-form tr F (Prop.
// trace_matching).
func (m *Mixture) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	if _, d, err := checkBatch(x, nil); err != nil {
		return nil, err
	} else if d != m.d {
		return nil, fmt.Errorf("access: query dim %d, mixture dim %d", d, m.d)
	}
	return m.net.scalarAt(m.trace, c, x)
}

// Apply implements score.FisherOperator: the closed-form F v (Prop.
// analytic_dirac).
func (m *Mixture) Apply(s score.State, v *mat.Dense) (*mat.Dense, error) {
	b, d, err := checkAt(s.At, s.X, v)
	if err != nil {
		return nil, err
	}
	if d != m.d {
		return nil, fmt.Errorf("access: query dim %d, mixture dim %d", d, m.d)
	}
	dt := m.net.DType
	alpha, sigma := timesOf(dt, s.At)
	res, err := m.mvec.Exec(tensormat.FromMatrix(dt, s.X), tensormat.FromMatrix(dt, v), alpha, sigma)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return tensormat.Dense(res[0], b, d), nil
}
