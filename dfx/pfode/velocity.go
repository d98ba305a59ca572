package pfode

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// The PF-ODE's formulas, written once. c holds α, σ, f and g² at the time
// of the evaluation; x and the model's outputs are [B, d].

// Velocity writes the PF-ODE velocity (eq. PFODE)
//
//	v = f(t) x − ½ g²(t) ∇log q_t(x)
//
// into dst [B, d] (dst may be x).
func Velocity(dst *mat.Dense, c schedule.Coefficients, x, score *mat.Dense) {
	b, d := x.Dims()
	for i := 0; i < b; i++ {
		xr, sr, dr := x.RawRowView(i)[:d], score.RawRowView(i)[:d], dst.RawRowView(i)[:d]
		for j := range dr {
			dr[j] = c.F*xr[j] - 0.5*c.G2*sr[j]
		}
	}
}

// VelocityFromDenoiser is the velocity in terms of the denoiser
// ȳ = E[x_0 | x_t] (Tweedie: ∇log q_t = −(x − α ȳ)/σ²):
//
//	v = f x + ½ g² (x − α ȳ)/σ².
func VelocityFromDenoiser(dst *mat.Dense, c schedule.Coefficients, x, ybar *mat.Dense) {
	b, d := x.Dims()
	half, s2 := 0.5*c.G2, c.Sigma*c.Sigma
	for i := 0; i < b; i++ {
		xr, yr, dr := x.RawRowView(i)[:d], ybar.RawRowView(i)[:d], dst.RawRowView(i)[:d]
		for j := range dr {
			dr[j] = c.F*xr[j] + half*(xr[j]-c.Alpha*yr[j])/s2
		}
	}
}

// VelocityFromEps is the velocity in terms of the noise prediction
// ε̂ = −σ ∇log q_t (eq. score parameterisation, s_θ = −ε_θ/σ):
//
//	v = f x + ½ g² ε̂/σ.
func VelocityFromEps(dst *mat.Dense, c schedule.Coefficients, x, eps *mat.Dense) {
	b, d := x.Dims()
	k := 0.5 * c.G2 / c.Sigma
	for i := 0; i < b; i++ {
		xr, er, dr := x.RawRowView(i)[:d], eps.RawRowView(i)[:d], dst.RawRowView(i)[:d]
		for j := range dr {
			dr[j] = k*er[j] + c.F*xr[j]
		}
	}
}

// LogDensityRate is d log q_t(x_t)/dt along the PF-ODE (eq. nll_ode, the
// instantaneous change of variables of Chen et al. 2018):
//
//	d log q_t(x_t)/dt = −div v = −f(t) d − ½ g²(t) tr F_t(x_t),
//
// with tr F_t = −tr ∇² log q_t the Fisher trace at the point and d the
// dimension.
func LogDensityRate(c schedule.Coefficients, d int, traceF float64) float64 {
	return -(c.F*float64(d) + 0.5*c.G2*traceF)
}

// VelocityJacobian writes J = ∂v/∂x = f I − ½ g² ∇²log q_t = f I + ½ g² F_t
// (F_t the d×d Fisher at the point, or a network's F_θ, which need not be
// symmetric) into dst, row-major d×d.
func VelocityJacobian(dst []float64, c schedule.Coefficients, fisher mat.Matrix) {
	d, _ := fisher.Dims()
	half := 0.5 * c.G2
	for i := 0; i < d; i++ {
		for l := 0; l < d; l++ {
			v := half * fisher.At(i, l)
			if i == l {
				v += c.F
			}
			dst[i*d+l] = v
		}
	}
}

// DDIMStep is the one DDIM / exponential-integrator step of the
// repository (Song et al. 2021 with η = 0; Lu et al. 2022, DPM-Solver-1):
// it moves x [B, d] in place from c0 to c1 with the model's output ev at
// (x, c0) frozen. From the noise prediction ε̂ when ev has it,
//
//	x' = (α₁/α₀) x + (σ₁ − (α₁/α₀) σ₀) ε̂        (DDIMEpsCoefficients),
//
// else from the denoiser ȳ (a score is converted to ȳ by Tweedie),
//
//	x' = (σ₁/σ₀) x + (α₁ − (σ₁/σ₀) α₀) ȳ        (DDIMCoefficients):
//
// the same step, each form free of a conversion for its kind of model.
func DDIMStep(x *mat.Dense, c0, c1 schedule.Coefficients, ev *score.Eval) {
	var r, w float64
	u := ev.Eps
	if u != nil {
		r, w = DDIMEpsCoefficients(c0, c1)
	} else {
		if ev.Denoiser == nil {
			ev.Denoiser = new(mat.Dense)
			score.DenoiserFromScore(ev.Denoiser, c0, x, ev.Score)
		}
		u = ev.Denoiser
		r, w = DDIMCoefficients(c0, c1)
	}
	b, d := x.Dims()
	for i := 0; i < b; i++ {
		xr, ur := x.RawRowView(i)[:d], u.RawRowView(i)[:d]
		for j, v := range ur {
			xr[j] = r*xr[j] + w*v
		}
	}
}

// CheckDDIMTarget refuses a DDIM step towards coefficients without α > 0 and
// σ ≥ 0.
func CheckDDIMTarget(c1 schedule.Coefficients) error {
	if !(c1.Alpha > 0) || c1.Sigma < 0 {
		return fmt.Errorf("DDIM target α = %g, σ = %g", c1.Alpha, c1.Sigma)
	}
	return nil
}

// DDIMCoefficients are the weights of the DDIM step from c0 to c1 in the
// denoiser form: x' = r x + w ȳ with r = σ₁/σ₀, w = α₁ − r α₀.
func DDIMCoefficients(c0, c1 schedule.Coefficients) (r, w float64) {
	r = c1.Sigma / c0.Sigma
	return r, c1.Alpha - r*c0.Alpha
}

// DDIMEpsCoefficients are the weights of the DDIM step from c0 to c1 in the
// ε form: x' = a x + b ε̂ with a = α₁/α₀, b = σ₁ − a σ₀.
func DDIMEpsCoefficients(c0, c1 schedule.Coefficients) (a, b float64) {
	a = c1.Alpha / c0.Alpha
	return a, c1.Sigma - a*c0.Sigma
}

// DDIMAdjointStep is the DDIM step's vector-Jacobian product (the discrete
// eq. Adjoint_ODE): with ∂ε̂/∂x = σ₀ F (F = −∇²log q symmetric),
//
//	λ ← a λ + b σ₀ F λ,   (a, b) = DDIMEpsCoefficients(c0, c1),
//
// in place on lambda [B, d], given fl = F λ [B, d] at the step's start.
func DDIMAdjointStep(lambda *mat.Dense, c0, c1 schedule.Coefficients, fl *mat.Dense) {
	a, bb := DDIMEpsCoefficients(c0, c1)
	k := bb * c0.Sigma
	b, d := lambda.Dims()
	for r := 0; r < b; r++ {
		lr, fr := lambda.RawRowView(r)[:d], fl.RawRowView(r)[:d]
		for j := range lr {
			lr[j] = a*lr[j] + k*fr[j]
		}
	}
}

// DDIMJacobian writes the DDIM step's Jacobian
//
//	S = r I + w ∂ȳ/∂x = r I + (w/α)(I − σ² F)        (∂ȳ/∂x = (I − σ² F)/α, Tweedie)
//
// at c0 into dst, row-major d×d.
func DDIMJacobian(dst []float64, c0 schedule.Coefficients, r, w float64, fisher mat.Matrix) {
	d, _ := fisher.Dims()
	s2 := c0.Sigma * c0.Sigma
	for i := 0; i < d; i++ {
		for l := 0; l < d; l++ {
			v := -w / c0.Alpha * s2 * fisher.At(i, l)
			if i == l {
				v += r + w/c0.Alpha
			}
			dst[i*d+l] = v
		}
	}
}

// mulAdd sets dst = a·b (d×d, row-major); the sum runs over the inner index
// in order.
func mulAdd(dst, a, b []float64, d int) {
	for i := 0; i < d; i++ {
		for l := 0; l < d; l++ {
			s := 0.0
			for m := 0; m < d; m++ {
				s += a[i*d+m] * b[m*d+l]
			}
			dst[i*d+l] = s
		}
	}
}
