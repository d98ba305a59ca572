// Package access evaluates the diffusion Fisher F = −∇²log q_t(x) of a score
// network, batched, through dfx/score's two access contracts, keyed by the
// coefficients c of one time: a score.TraceEstimator (c, x_t [B,d]) → tr F
// [B] and a score.FisherOperator (State{c, x_t, …}, v) → F v [B,d]. Host
// batches are gonum *mat.Dense [B, d].
//
// A network enters through one contract, Network: ε_θ(x, α, σ) (or, through
// EpsFromDenoiser, the denoiser ȳ_θ) and the scalar DF-TM networks t_θ and
// ν_θ, as graph functions on a *model.Scope. Net adds what it takes to run
// them on the host (backend, store, dtype) and host wrappers at
// coefficients c (EpsAt, DenoiserAt, TAt, NuAt); NetModel is a Net (with a
// trace estimator, optionally) as a score.Model, the one adapter from a
// network to the samplers and the likelihood ODE.
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
//   - DFEA: F v ≈ v/σ² − (α²/σ⁴)⟨x₀,v⟩x₀ + (α²/σ⁴)⟨ȳ_θ,v⟩ȳ_θ (eq. EA_approx),
//     from a sampler's ȳ at hand or by the network, with its error bound
//     (DFEAErrorBound) and its matrix (DFEAMatrix);
//   - Mixture: a Dirac mixture's closed forms as a graph (Prop.
//     analytic_dirac), whose Net is also usable as an exact "network";
//     score.Exact is the float64 reference.
//
// NewTrace and NewOperator build every one of them from a spec string, the
// one registry of the repository: a spec's canonical name ("vjp-exact",
// "hutchinson-16", "hutch++-48", "df-tm", "df-tm-c", "vjp-matvec", "df-ea")
// is what the built value's Name() prints, the older spellings
// ("hutchinson:16", "dftm", "dfea", "vjp", …) are aliases, and packages
// with networks of their own register their families (RegisterTrace; e.g.
// models' "skip-hutchinson-K").
//
// OperatorMatrix turns any operator into its d×d matrix. The graph builders
// behind them (VJPMatVecGraph, DFTMTraceGraph, DFTMCentredTraceGraph,
// DFEAMatVecGraph, DenoiserGraph, GuidedEpsGraph) are exported so they
// compose inside other graphs. Everything runs on GoMLX graphs, with
// GoMLX's own VJPs.
package access

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
)

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
