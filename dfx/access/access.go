// Package access evaluates the diffusion Fisher F = −∇²log q_t(x) of a score
// network, batched, through two interfaces: a TraceEstimator (x_t [B,d], t)
// → tr F [B] and a FisherOperator (x_t, t, v) → F v [B,d]. Host batches are
// gonum *mat.Dense [B, d].
//
// A network enters through one contract, Network: ε_θ(x, t) (or, through
// EpsFromDenoiser, the denoiser ȳ_θ) and the scalar DF-TM networks t_θ and
// ν_θ, as graph functions on a *model.Scope. Net adds what it takes to run
// them on the host (backend, store, schedule, dtype) and host wrappers
// (EpsAt, DenoiserAt, TAt, NuAt).
//
// Implementations (paper sections sec:tm "Diffusion Fisher Trace Matching"
// and sec:ea "Diffusion Fisher Endpoint Approximation"):
//
//   - VJPTrace: exact trace of the network's Fisher, d VJPs batched over the
//     basis vectors (eq. nll_VJP);
//   - Hutchinson (Rademacher or Gaussian probes) and HutchPP (Hutch++);
//   - VJPMatVec: F v ≈ (1/σ) ∂⟨ε_θ, v⟩/∂x (eq. Adjoint_VJP);
//   - DFTM: tr F ≈ d/σ² − (α²/σ⁴)(d·t_θ − ‖ȳ_θ‖²) (eq. trace_appro), with a
//     corrected error bound (DFTMErrorBound);
//   - DFTMCentred (ours, beyond the paper): tr F ≈ (d/σ²)(1 − ν_θ) with ν_θ
//     regressed on ‖ε̂_θ − ε‖²/d, free of DF-TM's α²/σ⁴ cancellation;
//   - DFEA: F v ≈ v/σ² − (α²/σ⁴)⟨x₀,v⟩x₀ + (α²/σ⁴)⟨ȳ_θ,v⟩ȳ_θ (eq. EA_approx);
//   - Mixture: a Dirac mixture's closed forms as a graph (Prop.
//     analytic_dirac), whose Net is also usable as an exact "network".
//
// The graph builders behind them (VJPMatVecGraph, DFTMTraceGraph,
// DFTMCentredTraceGraph, DFEAMatVecGraph, DenoiserGraph) are exported so
// they compose inside other graphs. Everything runs on GoMLX graphs, with
// GoMLX's own VJPs.
package access

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"
)

// TraceEstimator maps queries x [B, d] at time t to tr F(x_b, t) for each b.
type TraceEstimator interface {
	Name() string
	Trace(x *mat.Dense, t float64) ([]float64, error)
}

// FisherOperator maps queries x [B, d] and vectors v [B, d] to the rows
// F(x_b, t) v_b [B, d].
type FisherOperator interface {
	Name() string
	MatVec(x *mat.Dense, t float64, v *mat.Dense) (*mat.Dense, error)
}

// checkBatch validates x [B, d] (and v, if not nil, of the same shape).
func checkBatch(x, v *mat.Dense) (b, d int, err error) {
	if x == nil || x.IsEmpty() {
		return 0, 0, fmt.Errorf("access: empty batch")
	}
	b, d = x.Dims()
	if v != nil {
		if v.IsEmpty() {
			return 0, 0, fmt.Errorf("access: empty vectors for %d queries", b)
		}
		if vb, vd := v.Dims(); vb != b || vd != d {
			return 0, 0, fmt.Errorf("access: vectors [%d, %d] for queries [%d, %d]", vb, vd, b, d)
		}
	}
	return b, d, nil
}

// matrix converts a [R, d] matrix to a tensor of dtype.
func matrix(dtype dtypes.DType, m mat.Matrix) *tensors.Tensor {
	r, d := m.Dims()
	if dtype == dtypes.Float64 {
		flat := make([]float64, 0, r*d)
		for i := range r {
			flat = append(flat, rowOf(m, i)...)
		}
		return tensors.FromFlatDataAndDimensions(flat, r, d)
	}
	flat := make([]float32, 0, r*d)
	for i := range r {
		for _, x := range rowOf(m, i) {
			flat = append(flat, float32(x))
		}
	}
	return tensors.FromFlatDataAndDimensions(flat, r, d)
}

// rowOf is row i of m, without a copy where m is a *mat.Dense.
func rowOf(m mat.Matrix, i int) []float64 {
	if d, ok := m.(*mat.Dense); ok {
		_, c := d.Dims()
		return d.RawRowView(i)[:c]
	}
	return mat.Row(nil, i, m)
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
