package adjoint

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// State is what an Operator may use at one cached inner state: the time's
// coefficients, the states x_τ [B, d], the model's denoiser ȳ(x_τ, τ)
// [B, d] that the inner step already computed, and the inner solve's
// endpoint x̂₀ [B, d].
type State struct {
	At       schedule.Coefficients
	X        *mat.Dense
	Denoiser *mat.Dense
	Endpoint *mat.Dense
}

// Operator applies the diffusion Fisher F(x_τ, τ) = −∇²log q_τ (or an
// approximation of it) to vectors v [B, d], row by row: row b of the
// result is F(x_b, τ) v_b. F is symmetric, so this is also Fᵀ v, the
// right-hand side of eq. Adjoint_ODE.
type Operator interface {
	// Name is a short name ("exact", "vjp", "df-ea").
	Name() string
	Apply(s State, v *mat.Dense) (*mat.Dense, error)
}

// Exact is a mixture's exact F v in float64 (Props. analytic_dirac and
// analytic_general): the reference the approximations are scored against.
type Exact struct{ Mixture mixture.Mixture }

// Name implements Operator.
func (Exact) Name() string { return "exact" }

// Apply implements Operator.
func (e Exact) Apply(s State, v *mat.Dense) (*mat.Dense, error) {
	r, err := e.Mixture.Eval(mixture.Query{At: s.At, X: s.X, V: v, Want: mixture.MatVec})
	if err != nil {
		return nil, err
	}
	return r.MatVec, nil
}

// VJP is F v ≈ (1/σ) ∂⟨ε_θ(x, τ), v⟩/∂x, one vector-Jacobian product
// through the network per call (eq. Adjoint_VJP, access.VJPMatVec). Its
// cost is a network forward and backward pass per inner step.
type VJP struct {
	net *access.Net
	op  *access.VJPMatVec
}

// NewVJP compiles the VJP operator of a network. The Net's schedule must be
// the Guide's (Apply checks α and σ).
func NewVJP(net *access.Net) (*VJP, error) {
	if net == nil {
		return nil, fmt.Errorf("adjoint: no network: %w", ErrInput)
	}
	op, err := access.NewVJPMatVec(net)
	if err != nil {
		return nil, err
	}
	return &VJP{net: net, op: op}, nil
}

// Name implements Operator.
func (*VJP) Name() string { return "vjp" }

// Apply implements Operator.
func (o *VJP) Apply(s State, v *mat.Dense) (*mat.Dense, error) {
	if err := sameSchedule(o.net, s.At); err != nil {
		return nil, err
	}
	return o.op.MatVec(s.X, s.At.T, v)
}

// DFEA is DF endpoint approximation (eq. EA_approx):
//
//	F v ≈ v/σ² − (α²/σ⁴)⟨x̂₀,v⟩x̂₀ + (α²/σ⁴)⟨ȳ,v⟩ȳ,
//
// with ȳ the denoiser the inner solve computed at the state and x̂₀ the
// inner solve's endpoint: O(B·d) operations and no network pass
// (access.DFEAApply).
type DFEA struct{}

// Name implements Operator.
func (DFEA) Name() string { return "df-ea" }

// Apply implements Operator.
func (DFEA) Apply(s State, v *mat.Dense) (*mat.Dense, error) {
	if s.Denoiser == nil || s.Endpoint == nil {
		return nil, fmt.Errorf("adjoint: DF-EA needs the state's denoiser and endpoint: %w", ErrInput)
	}
	return access.DFEAApply(s.Denoiser, s.Endpoint, v, s.At.Alpha, s.At.Sigma)
}
