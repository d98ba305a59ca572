// Package pfode is dfx's one integrator of the probability-flow ODE
// (paper eq. PFODE)
//
//	dx/dt = v(x, t) = f(t) x − ½ g²(t) ∇log q_t(x)
//
// and of the quantities carried along it (an augmented state):
//
//	d Δ/dt = −div v = −f(t) d − ½ g²(t) tr F_t(x)    (log-density change, eq. nll_ode)
//	dA/dt  = J A,  J = ∂v/∂x = f I + ½ g² F_t(x)     (variational equation: A = ∂x_t/∂x_{t0})
//	dλ/dt  = −Jᵀ λ                                    (adjoint: λ_t = ∂L/∂x_t)
//
// with F_t = −∇² log q_t the diffusion Fisher. Δ_t = log q_t(x_t) − log q_{t0}(x_{t0}).
//
// The core is small and generic, in the style of diffrax and torchdiffeq:
//
//   - a System is an ODE dy/dt = F(t, y) on a flat state y;
//   - a Method advances a System one step: the explicit Runge–Kutta methods
//     are Butcher tableaux (Euler, Heun, RK4), and DDIM is the
//     exponential-integrator step of systems that implement Exponential;
//   - Solve integrates on a given time grid, SolveAdaptive between t0 and t1
//     with Dormand–Prince 5(4) under rtol/atol; both walk either direction
//     (t increasing or decreasing), call an observer after every accepted
//     step and return Stats (steps, rejections, function evaluations);
//   - PFODE is the System of the augmented PF-ODE for a score.Model (ε̂,
//     the denoiser or the score, and the Fisher's trace or full matrix when
//     asked) on a schedule.Source of coefficients; Velocity,
//     VelocityFromEps, VelocityFromDenoiser and LogDensityRate are its
//     formulas, written once;
//   - density guidance (DensityGuide, PFODE.Guide) steers the carried
//     log-density: u = v + λ s/‖s‖² changes d/dt log q_t(x_t) by λ, so a
//     sample follows a DensityTarget (an Offset per unit time, or a Level
//     such as a quantile of log q_t under q_t, Quantiles), with the trace
//     from the model's trace estimator (exact, VJP, Hutchinson, DF-TM);
//   - DDIMStep is the repository's one DDIM step, from any model's output
//     (PFODE's ExpStep, dfx/adjoint's sampler and the MNIST sampler call
//     it), and DDIMAdjointStep its vector-Jacobian product.
//
// Shapes: x is [B, d] (a *mat.Dense), Δ is [B], A is B
// row-major d×d matrices, λ is [B, d].
package pfode
