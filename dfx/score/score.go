// Package score is dfx's one host model contract: what every sampler,
// likelihood solver and guidance loop asks of a diffusion model, whether it
// is a network, an exact mixture or a fitted Gaussian (in the spirit of
// k-diffusion's model(x, σ) → denoised).
//
// At the coefficients c = (α, σ, f, g²) of one time and for a batch of
// points x [B, d], a Model returns its noise prediction ε̂, its denoiser
// x̂₀ = ȳ = E[x₀ | x_t] or its score ∇log q_t — the three are one quantity
// in three parameterisations (Tweedie, paper Prop. optimal_y):
//
//	ε̂ = −σ ∇log q_t,   ȳ = (x − σ ε̂)/α = (x + σ² ∇log q_t)/α,
//
// and, when asked, the Fisher F = −∇²log q_t's trace [B] or full matrices.
// A Fisher product F v is asked of a FisherOperator and a trace of a
// TraceEstimator, the two access contracts (paper sec:tm, sec:ea), both
// keyed by Coefficients too.
//
// The conversions between the parameterisations are written once here
// (ScoreFromEps, DenoiserFromEps, …) and as methods of Eval. Host batches
// are *mat.Dense [B, d], row-major; rows never interact.
package score

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Want selects what a Model must return besides its native output (the
// first of Score, Eps, Denoiser it sets); combine with |.
type Want uint

const (
	WantTrace    Want = 1 << iota // tr F [B]
	WantFisher                    // F, d×d per point
	WantDenoiser                  // ȳ [B, d]
	WantEps                       // ε̂ [B, d]
	WantScore                     // ∇log q_t [B, d]
)

// Eval is a Model's answer at [B, d] points. At least one of Score, Eps and
// Denoiser is set, and every one that was asked for.
type Eval struct {
	Score    *mat.Dense      // ∇log q_t(x) [B, d]
	Eps      *mat.Dense      // ε̂ = −σ ∇log q_t [B, d]
	Denoiser *mat.Dense      // ȳ = E[x_0 | x_t] [B, d]
	Trace    []float64       // tr F_t [B] (WantTrace)
	Fisher   []*mat.SymDense // F_t per point, d×d (WantFisher)
	// Jacobian answers WantFisher for a model whose Fisher is not
	// symmetric: a network's F_θ = (1/σ) ∂ε̂/∂x per point, row i the
	// gradient of ε̂_i/σ (nil when Fisher is set).
	Jacobian []*mat.Dense
}

// FisherOf is point i's Fisher matrix: Fisher[i], or Jacobian[i] for a
// model that answers with the general matrix.
func (e *Eval) FisherOf(i int) mat.Matrix {
	if e.Fisher != nil {
		return e.Fisher[i]
	}
	return e.Jacobian[i]
}

// Model is the data side of every diffusion computation: at the
// coefficients c of one time, for points x [B, d], ε̂ / ȳ / score and, as
// want asks, the Fisher's trace or matrices.
type Model interface {
	Eval(c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error)

// Eval implements Model.
func (f ModelFunc) Eval(c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error) {
	return f(c, x, want)
}

// Main is the model's native output: the first of Score, Eps and Denoiser
// that is set (nil if none).
func (e *Eval) Main() *mat.Dense {
	switch {
	case e.Score != nil:
		return e.Score
	case e.Eps != nil:
		return e.Eps
	}
	return e.Denoiser
}

// Fill sets the parameterisations that want names (WantScore, WantEps,
// WantDenoiser) and e lacks, by Tweedie from the first one e has (Score,
// then Eps, then Denoiser); x [B, d] are the points e was evaluated at.
func (e *Eval) Fill(c schedule.Coefficients, x *mat.Dense, want Want) error {
	if e.Main() == nil {
		return fmt.Errorf("score: the model returned neither score, ε nor denoiser at t = %g", c.T)
	}
	if want&WantScore != 0 && e.Score == nil {
		e.Score = new(mat.Dense)
		if e.Eps != nil {
			ScoreFromEps(e.Score, c, e.Eps)
		} else {
			ScoreFromDenoiser(e.Score, c, x, e.Denoiser)
		}
	}
	if want&WantEps != 0 && e.Eps == nil {
		e.Eps = new(mat.Dense)
		if e.Score != nil {
			EpsFromScore(e.Eps, c, e.Score)
		} else {
			EpsFromDenoiser(e.Eps, c, x, e.Denoiser)
		}
	}
	if want&WantDenoiser != 0 && e.Denoiser == nil {
		e.Denoiser = new(mat.Dense)
		if e.Score != nil {
			DenoiserFromScore(e.Denoiser, c, x, e.Score)
		} else {
			DenoiserFromEps(e.Denoiser, c, x, e.Eps)
		}
	}
	return nil
}

// Check verifies that e answers want for b points of dimension d: the main
// output's shape and the lengths of the trace and Fisher slices.
func (e *Eval) Check(b, d int, want Want) error {
	main := e.Main()
	if main == nil {
		return fmt.Errorf("score: the model returned neither score, ε nor denoiser")
	}
	if r, cc := main.Dims(); r != b || cc != d {
		return fmt.Errorf("score: the model returned [%d, %d] for [%d, %d] points", r, cc, b, d)
	}
	if want&WantTrace != 0 && len(e.Trace) != b {
		return fmt.Errorf("score: the model returned %d traces for %d points", len(e.Trace), b)
	}
	if want&WantFisher != 0 && len(e.Fisher) != b && (e.Fisher != nil || len(e.Jacobian) != b) {
		return fmt.Errorf("score: the model returned %d Fisher matrices for %d points", max(len(e.Fisher), len(e.Jacobian)), b)
	}
	return nil
}

// The Tweedie conversions, row-wise on [B, d] matrices; dst may be the
// input it is computed from (not x). Each is written once, here.

// ScoreFromEps sets dst = −ε̂/σ (computed as (−1/σ)·ε̂).
func ScoreFromEps(dst *mat.Dense, c schedule.Coefficients, eps *mat.Dense) {
	dst.Scale(-1/c.Sigma, eps)
}

// EpsFromScore sets dst = −σ ∇log q_t.
func EpsFromScore(dst *mat.Dense, c schedule.Coefficients, s *mat.Dense) {
	dst.Scale(-c.Sigma, s)
}

// DenoiserFromEps sets dst = ȳ = (x − σ ε̂)/α.
func DenoiserFromEps(dst *mat.Dense, c schedule.Coefficients, x, eps *mat.Dense) {
	apply(dst, x, eps, func(x, e float64) float64 { return (x - c.Sigma*e) / c.Alpha })
}

// DenoiserFromScore sets dst = ȳ = (x + σ² ∇log q_t)/α.
func DenoiserFromScore(dst *mat.Dense, c schedule.Coefficients, x, s *mat.Dense) {
	s2 := c.Sigma * c.Sigma
	apply(dst, x, s, func(x, g float64) float64 { return (x + s2*g) / c.Alpha })
}

// EpsFromDenoiser sets dst = ε̂ = (x − α ȳ)/σ.
func EpsFromDenoiser(dst *mat.Dense, c schedule.Coefficients, x, ybar *mat.Dense) {
	apply(dst, x, ybar, func(x, y float64) float64 { return (x - c.Alpha*y) / c.Sigma })
}

// ScoreFromDenoiser sets dst = ∇log q_t = −(x − α ȳ)/σ².
func ScoreFromDenoiser(dst *mat.Dense, c schedule.Coefficients, x, ybar *mat.Dense) {
	s2 := c.Sigma * c.Sigma
	apply(dst, x, ybar, func(x, y float64) float64 { return -(x - c.Alpha*y) / s2 })
}

// apply sets dst[i, j] = f(x[i, j], u[i, j]), resizing an empty dst.
func apply(dst, x, u *mat.Dense, f func(x, u float64) float64) {
	b, d := u.Dims()
	if dst.IsEmpty() {
		dst.ReuseAs(b, d)
	}
	for i := 0; i < b; i++ {
		xr, ur, dr := x.RawRowView(i)[:d], u.RawRowView(i)[:d], dst.RawRowView(i)[:d]
		for j := range dr {
			dr[j] = f(xr[j], ur[j])
		}
	}
}
