// Package access evaluates the diffusion Fisher F = −∇²log q_t(x) of a score
// network, batched, through two interfaces: a TraceEstimator (x_t [B,d], t)
// → tr F [B] and a FisherOperator (x_t, t, v) → F v [B,d].
//
// Implementations (paper sections "Diffusion Fisher Trace Matching" and
// "Endpoint Approximation"):
//
//   - VJPTrace: exact trace of the network's Fisher, d VJPs batched over the
//     basis vectors (eq. nll_VJP);
//   - Hutchinson (Rademacher or Gaussian probes) and HutchPP (Hutch++);
//   - VJPMatVec: F v ≈ (1/σ) ∂⟨ε_θ, v⟩/∂x (eq. Adjoint_VJP);
//   - DFTM: tr F ≈ d/σ² − (α²/σ⁴)(d·t_θ − ‖ȳ_θ‖²) (eq. trace_appro);
//   - DFTMCentred (ours, beyond the paper): tr F ≈ (d/σ²)(1 − ν_θ) with ν_θ
//     regressed on ‖ε̂_θ − ε‖²/d, free of DF-TM's α²/σ⁴ cancellation;
//   - DFEA: F v ≈ v/σ² − (α²/σ⁴)⟨x₀,v⟩x₀ + (α²/σ⁴)⟨ȳ_θ,v⟩ȳ_θ (eq. EA_approx);
//   - Exact: a Dirac mixture's closed forms as a graph (Proposition
//     analytic_dirac), whose ε is also usable as a "network" (ExactEps).
//
// Everything runs on GoMLX graphs, with GoMLX's own VJPs.
package access

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TraceEstimator maps queries x [B][d] at time t to tr F(x_b, t) for each b.
type TraceEstimator interface {
	Name() string
	Trace(x [][]float64, t float64) ([]float64, error)
}

// FisherOperator maps queries x [B][d] and vectors v [B][d] to F(x_b, t) v_b.
type FisherOperator interface {
	Name() string
	MatVec(x [][]float64, t float64, v [][]float64) ([][]float64, error)
}

// EpsFn builds ε_θ(x, t) [R, d] for x [R, d] and per-row α, σ [R]. Rows must
// not interact (every estimator tiles queries along the batch axis).
type EpsFn func(ctx *model.Scope, x, alpha, sigma *graph.Node) *graph.Node

// ScalarFn builds a per-row scalar [R], e.g. the DF-TM network t_θ.
type ScalarFn func(ctx *model.Scope, x, alpha, sigma *graph.Node) *graph.Node

// Net is a noise-conditional network with everything needed to run it.
type Net struct {
	Backend  compute.Backend
	Store    *model.Store // holds the network's variables
	Schedule schedule.Schedule
	DType    dtypes.DType // Float32 or Float64
	Eps      EpsFn
	T        ScalarFn // DF-TM network; nil if none
	Nu       ScalarFn // centred DF-TM network ν_θ (ours); nil if none
}

// coefficients checks t and returns α(t), σ(t).
func (n *Net) coefficients(t float64) (alpha, sigma float64, err error) {
	c, err := schedule.At(n.Schedule, t)
	if err != nil {
		return 0, 0, fmt.Errorf("access: %w", err)
	}
	return c.Alpha, c.Sigma, nil
}

// checkBatch validates x [B][d] (and v, if given, of the same shape).
// batchAt checks a batch (and its vectors v, nil for none) and returns its
// size, its dimension and the schedule's α, σ at t: the prologue of every
// estimator.
func (n *Net) batchAt(x, v [][]float64, t float64) (b, d int, a, s float64, err error) {
	if b, d, err = checkBatch(x, v); err != nil {
		return 0, 0, 0, 0, err
	}
	a, s, err = n.coefficients(t)
	return b, d, a, s, err
}

func checkBatch(x, v [][]float64) (b, d int, err error) {
	if len(x) == 0 || len(x[0]) == 0 {
		return 0, 0, fmt.Errorf("access: empty batch")
	}
	b, d = len(x), len(x[0])
	for i, row := range x {
		if len(row) != d {
			return 0, 0, fmt.Errorf("access: query %d has dim %d, query 0 has %d", i, len(row), d)
		}
	}
	if v != nil {
		if len(v) != b {
			return 0, 0, fmt.Errorf("access: %d vectors for %d queries", len(v), b)
		}
		for i, row := range v {
			if len(row) != d {
				return 0, 0, fmt.Errorf("access: vector %d has dim %d, want %d", i, len(row), d)
			}
		}
	}
	return b, d, nil
}

// matrix converts rows to a [len(rows), d] tensor of dtype.
func matrix(dtype dtypes.DType, rows [][]float64) *tensors.Tensor {
	d := len(rows[0])
	if dtype == dtypes.Float64 {
		flat := make([]float64, 0, len(rows)*d)
		for _, r := range rows {
			flat = append(flat, r...)
		}
		return tensors.FromFlatDataAndDimensions(flat, len(rows), d)
	}
	flat := make([]float32, 0, len(rows)*d)
	for _, r := range rows {
		for _, x := range r {
			flat = append(flat, float32(x))
		}
	}
	return tensors.FromFlatDataAndDimensions(flat, len(rows), d)
}

// filled is a [n] tensor holding value.
func filled(dtype dtypes.DType, n int, value float64) *tensors.Tensor {
	if dtype == dtypes.Float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = value
		}
		return tensors.FromFlatDataAndDimensions(v, n)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(value)
	}
	return tensors.FromFlatDataAndDimensions(v, n)
}

// flat reads a tensor's values as float64 and frees it.
func flat(t *tensors.Tensor) []float64 {
	defer t.MustFinalizeAll()
	switch t.DType() {
	case dtypes.Float64:
		return tensors.MustCopyFlatData[float64](t)
	case dtypes.Float32:
		f := tensors.MustCopyFlatData[float32](t)
		out := make([]float64, len(f))
		for i, x := range f {
			out[i] = float64(x)
		}
		return out
	}
	panic(fmt.Sprintf("access: unexpected output dtype %s", t.DType()))
}

func rowsOf(v []float64, d int) [][]float64 {
	out := make([][]float64, len(v)/d)
	for i := range out {
		out[i] = v[i*d : (i+1)*d]
	}
	return out
}

// matVecGraph is the network's Fisher applied to v by one VJP (eq. Adjoint_VJP):
// F v ≈ (1/σ) ∂⟨ε_θ(x), v⟩/∂x, row-wise. x, v [R,d]; alpha, sigma [R].
func matVecGraph(eps EpsFn, ctx *model.Scope, x, v, alpha, sigma *graph.Node) *graph.Node {
	e := eps(ctx, x, alpha, sigma)
	jv := graph.Gradient(graph.ReduceAllSum(graph.Mul(e, graph.StopGradient(v))), x)[0]
	return graph.Div(jv, graph.InsertAxes(sigma, -1))
}

// quadGraph is vᵀ F v per row [R].
func quadGraph(eps EpsFn, ctx *model.Scope, x, v, alpha, sigma *graph.Node) *graph.Node {
	return graph.ReduceSum(graph.Mul(v, matVecGraph(eps, ctx, x, v, alpha, sigma)), -1)
}

// exec1 builds a model.Exec whose graph function takes a slice of inputs.
func (n *Net) exec(fn func(ctx *model.Scope, in []*graph.Node) *graph.Node) (*model.Exec, error) {
	if n.Store == nil {
		n.Store = model.NewStore()
	}
	return model.NewExec(n.Backend, n.Store, fn)
}

func isFinite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
