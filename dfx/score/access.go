package score

import (
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// The two ways to access the diffusion Fisher F = −∇²log q_t (paper sec:tm
// and sec:ea), keyed by the coefficients of one time like Model. Their
// implementations live in dfx/access (networks: VJP, Hutchinson, Hutch++,
// DF-TM, DF-EA) and here (Exact, a mixture's closed forms).

// TraceEstimator maps points x [B, d] at the coefficients c to tr F(x_b) for
// each row b.
type TraceEstimator interface {
	// Name is a short name ("exact", "vjp-exact", "df-tm", …).
	Name() string
	Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error)
}

// State is where a FisherOperator is applied: the coefficients At, the
// points X [B, d] and, where a sampler has them at hand, the model's
// denoiser ȳ(X) [B, d] and the endpoint x̂₀ [B, d] of an inner solve from
// X (what DF-EA needs; nil otherwise).
type State struct {
	At       schedule.Coefficients
	X        *mat.Dense
	Denoiser *mat.Dense
	Endpoint *mat.Dense
}

// FisherOperator applies F(x_b) (or an approximation) to vectors v [B, d],
// row by row: row b of the result is F(x_b) v_b. F is symmetric, so this is
// also Fᵀ v, the right-hand side of the adjoint ODE (eq. Adjoint_ODE). A
// network's F_θ = (1/σ) ∂ε̂/∂x need not be: its VJP operator gives F_θᵀ v,
// still the adjoint's right-hand side (and access.OperatorMatrix's rows
// are then those of F_θ).
type FisherOperator interface {
	// Name is a short name ("exact", "vjp", "df-ea", …).
	Name() string
	Apply(s State, v *mat.Dense) (*mat.Dense, error)
}
