// Package ot is the numerical optimal-transport test of PF-ODE maps (paper
// section "Numerical OT Verification of DMs", Corollary 1, Algorithm ot,
// Table 3).
//
// # What is integrated
//
// For a data mixture q_0 (Dirac points or Gaussian components, package
// mixture) and a noise schedule, the PF-ODE dx/dt = h(x,t),
// h = f x − ½ g² ∇log q_t (paper eq. PFODE), is integrated with the exact
// score from x_T to x_s, s < T, by Euler, DDIM (the exponential-integrator
// step with the exact denoiser), Heun or RK4 on a chosen time grid, all
// dfx/pfode's. The schedule is a schedule.Source: a continuous schedule, or
// the published protocol's discrete table (Published). Along each chain the
// package carries a d×d matrix A by one of three rules:
//
//   - Jacobian: pfode's Jacobian component, the variational equation
//     discretised with the same stages as the state update, so A is exactly
//     Φ = ∂x_s/∂x_T of the computed discrete map (checked against central
//     finite differences in the tests). The drift's Jacobian is J = f I − ½ g² ∇²log q_t = f I + ½ g² F;
//     the DDIM step's Jacobian is (σ'/σ) I + (α' − σ'α/σ) ∂ȳ/∂x with
//     ∂ȳ/∂x = (I − σ² F)/α (Tweedie).
//   - Paper: the paper's Algorithm, A ← A + dt Aᵀ B with the paper's
//     B = f I − ½ g² F (eq. ot_b), explicit at the current node, whatever
//     the state solver.
//   - Published: the published script's update A ← A + dt B A.
//
// # Which matrix, and why the verdict does not depend on it
//
// The matrix reported by the Jacobian rule is Φ = ∂x_s/∂x_T, the Jacobian of
// the generation map x_T ↦ x_s. Corollary 1 asks whether
// T_{s,T}: x_s ↦ x_T is the gradient of a convex potential, i.e. whether
// Ψ = ∂x_T/∂x_s = Φ⁻¹ is symmetric positive definite on every chain. A
// matrix is symmetric iff its inverse is, and SPD iff its inverse is, so the
// verdict "symmetric and positive definite" is the same for Φ, Φ⁻¹ and Φ⁻ᵀ
// (x_T ↦ x_s is then the gradient of the convex conjugate potential).
//
// The paper's B is not the drift's Jacobian J = f I + ½ g² F: differentiating
// Ψ(t) = ∂x_T/∂x_t gives Ψ' = −Ψ J = Ψ (−f I − ½ g² F), while the proof
// writes Ψ' = Ψ B with B = f I − ½ g² F, i.e. the sign of f is flipped.
// Since B = −J + 2f I and f I commutes with everything, the published
// update A' = B A solves to A = exp(∫2f) Ψᵀ = exp(∫2f) Φ⁻ᵀ in the limit of
// small steps: a positive multiple of the transposed Jacobian of T_{s,T}.
// So the published matrix has the symmetry and definiteness of Ψ (the
// verdict agrees) but not its scale, and its asymmetry rate converges to
// I(Φ⁻¹), reported here as Verdict.AsymInverse. The asymmetry rate's value
// is not invariant under inversion, which is why I(Φ) and I(Φ⁻¹) differ.
//
// # Asymmetry rate
//
// I(A) = ‖A − Aᵀ‖_F / (√2 ‖A‖_F) ∈ [0, √2] (paper appendix "Numerical OT
// Experiments", which states [0, 1]: a skew-symmetric A has
// ‖A − Aᵀ‖_F = 2‖A‖_F, so I = √2); the published script zeroes the diagonal of A before both
// norms (Verdict.AsymOffDiag). A chain is OT-compatible iff I < tol and the
// symmetric part ½(A + Aᵀ) is positive definite.
package ot
