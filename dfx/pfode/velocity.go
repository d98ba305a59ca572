package pfode

import (
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
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
// (F_t the d×d Fisher at the point) into dst, row-major d×d.
func VelocityJacobian(dst []float64, c schedule.Coefficients, fisher mat.Symmetric) {
	d := fisher.SymmetricDim()
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

// DDIMCoefficients are the weights of the DDIM / exponential-integrator
// step from c0 to c1: x' = r x + w ȳ with r = σ₁/σ₀, w = α₁ − r α₀.
func DDIMCoefficients(c0, c1 schedule.Coefficients) (r, w float64) {
	r = c1.Sigma / c0.Sigma
	return r, c1.Alpha - r*c0.Alpha
}

// DDIMJacobian writes the DDIM step's Jacobian
//
//	S = r I + w ∂ȳ/∂x = r I + (w/α)(I − σ² F)        (∂ȳ/∂x = (I − σ² F)/α, Tweedie)
//
// at c0 into dst, row-major d×d.
func DDIMJacobian(dst []float64, c0 schedule.Coefficients, r, w float64, fisher mat.Symmetric) {
	d := fisher.SymmetricDim()
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
