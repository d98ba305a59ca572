package pfode

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// Carry selects the components of the augmented state beyond x.
type Carry uint

const (
	LogDensity Carry = 1 << iota // Δ [B]: d Δ/dt = LogDensityRate
	Jacobian                     // A, d×d per point: dA/dt = J A, A(t0) = I
	Adjoint                      // λ [B, d]: dλ/dt = −Jᵀ λ
)

// Layout places the components in a flat state y:
// x [B·d] | Δ [B] | A [B·d·d] | λ [B·d], each row-major, those not carried
// absent.
type Layout struct {
	B, D  int
	Carry Carry
}

func (l Layout) has(c Carry) bool { return l.Carry&c != 0 }

func (l Layout) offsets() (logd, jac, adj, end int) {
	o := l.B * l.D
	logd = o
	if l.has(LogDensity) {
		o += l.B
	}
	jac = o
	if l.has(Jacobian) {
		o += l.B * l.D * l.D
	}
	adj = o
	if l.has(Adjoint) {
		o += l.B * l.D
	}
	return logd, jac, adj, o
}

// Len is the length of the flat state.
func (l Layout) Len() int { _, _, _, n := l.offsets(); return n }

// X is a [B, d] view of the states in y.
func (l Layout) X(y []float64) *mat.Dense { return mat.NewDense(l.B, l.D, y[:l.B*l.D]) }

// LogDensity is the view of Δ = log q_t(x_t) − log q_{t0}(x_{t0}) [B]; nil if not carried.
func (l Layout) LogDensity(y []float64) []float64 {
	if !l.has(LogDensity) {
		return nil
	}
	o, _, _, _ := l.offsets()
	return y[o : o+l.B]
}

// Jacobians is the view of the B matrices A (row-major d×d, one after
// the other); nil if not carried.
func (l Layout) Jacobians(y []float64) []float64 {
	if !l.has(Jacobian) {
		return nil
	}
	_, o, _, _ := l.offsets()
	return y[o : o+l.B*l.D*l.D]
}

// Adjoint is a [B, d] view of λ; nil if not carried.
func (l Layout) Adjoint(y []float64) *mat.Dense {
	if !l.has(Adjoint) {
		return nil
	}
	_, _, o, _ := l.offsets()
	return mat.NewDense(l.B, l.D, y[o:o+l.B*l.D])
}

// Init returns a state with x copied from x0 [B, d], Δ = 0, A = I and λ
// copied from lambda0 [B, d] (nil: zero).
func (l Layout) Init(x0, lambda0 *mat.Dense) []float64 {
	y := make([]float64, l.Len())
	l.X(y).Copy(x0)
	if a := l.Jacobians(y); a != nil {
		for c := 0; c < l.B; c++ {
			for i := 0; i < l.D; i++ {
				a[c*l.D*l.D+i*l.D+i] = 1
			}
		}
	}
	if lam := l.Adjoint(y); lam != nil && lambda0 != nil {
		lam.Copy(lambda0)
	}
	return y
}

// PFODE is the augmented PF-ODE as a System: the velocity of x (eq. PFODE)
// and, as Layout.Carry asks, the log-density change (eq. nll_ode), the
// variational equation and the adjoint, all from one score.Model
// evaluation per stage. It also implements Exponential (the DDIM step) for
// x and A.
type PFODE struct {
	Layout
	Source schedule.Source
	Model  score.Model
	// Drive is the parameterisation the velocity and the DDIM step are
	// computed from (score.WantScore, WantEps or WantDenoiser; equal up to
	// rounding): it is asked of the model at every evaluation. Zero uses
	// the model's native output for the velocity and the denoiser for DDIM.
	Drive score.Want
	// Guide, if set, steers the samples' log-density (density guidance,
	// DensityGuide); it needs the log-density carried.
	Guide  *DensityGuide
	j, tmp []float64 // d×d scratch
}

// New returns the PF-ODE system of B points in dimension d.
func New(src schedule.Source, m score.Model, b, d int, carry Carry) *PFODE {
	return &PFODE{Layout: Layout{B: b, D: d, Carry: carry}, Source: src, Model: m,
		j: make([]float64, d*d), tmp: make([]float64, d*d)}
}

// coefficients returns the checked coefficients at t.
func (p *PFODE) coefficients(t float64) (schedule.Coefficients, error) {
	c, err := p.Source.At(t)
	if err != nil {
		return c, err
	}
	if err := c.Check(); err != nil {
		return c, fmt.Errorf("PF-ODE undefined: %w", err)
	}
	return c, nil
}

func (p *PFODE) eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	ev, err := p.Model.Eval(c, x, want)
	if err != nil {
		return nil, fmt.Errorf("model at t = %g: %w", c.T, err)
	}
	if err := ev.Check(p.B, p.D, want); err != nil {
		return nil, fmt.Errorf("at t = %g: %w", c.T, err)
	}
	if err := ev.Fill(c, x, want); err != nil {
		return nil, err
	}
	return ev, nil
}

// Deriv implements System.
func (p *PFODE) Deriv(t float64, y, dy []float64) error {
	c, err := p.coefficients(t)
	if err != nil {
		return err
	}
	want := p.Drive
	if p.has(LogDensity) {
		want |= score.WantTrace
	}
	if p.has(Jacobian | Adjoint) {
		want |= score.WantFisher
	}
	if p.Guide != nil {
		if !p.has(LogDensity) {
			return fmt.Errorf("pfode: density guidance needs the log-density carried")
		}
		want |= score.WantScore
	}
	x := p.X(y)
	ev, err := p.eval(c, x, want)
	if err != nil {
		return err
	}
	v := p.X(dy)
	switch {
	case p.Drive&score.WantDenoiser != 0 || ev.Score == nil && ev.Eps == nil:
		VelocityFromDenoiser(v, c, x, ev.Denoiser)
	case p.Drive&score.WantEps != 0 || ev.Score == nil:
		VelocityFromEps(v, c, x, ev.Eps)
	default:
		Velocity(v, c, x, ev.Score)
	}
	for _, u := range dy[:p.B*p.D] {
		if math.IsNaN(u) || math.IsInf(u, 0) {
			return fmt.Errorf("PF-ODE velocity is not finite at t = %g", t)
		}
	}
	if dl := p.LogDensity(dy); dl != nil {
		for i, tr := range ev.Trace {
			dl[i] = LogDensityRate(c, p.D, tr)
			if math.IsNaN(dl[i]) || math.IsInf(dl[i], 0) {
				return fmt.Errorf("non-finite Fisher trace %v at t = %g, row %d", tr, t, i)
			}
		}
		if p.Guide != nil {
			if err := p.Guide.steer(c, p.LogDensity(y), ev.Score, v, dl); err != nil {
				return err
			}
		}
	}
	if !p.has(Jacobian | Adjoint) {
		return nil
	}
	d := p.D
	a, da := p.Jacobians(y), p.Jacobians(dy)
	lam, dlam := p.Adjoint(y), p.Adjoint(dy)
	for r := 0; r < p.B; r++ {
		VelocityJacobian(p.j, c, ev.FisherOf(r))
		if a != nil {
			o := r * d * d
			mulAdd(da[o:o+d*d], p.j, a[o:o+d*d], d) // dA/dt = J A
		}
		if lam != nil {
			lr, dr := lam.RawRowView(r), dlam.RawRowView(r)
			for i := 0; i < d; i++ { // dλ/dt = −Jᵀ λ (J is symmetric for an exact model, not for a network)
				s := 0.0
				for m := 0; m < d; m++ {
					s += p.j[m*d+i] * lr[m]
				}
				dr[i] = -s
			}
		}
	}
	return nil
}

// ExpStep implements Exponential: the DDIM step of x (DDIMStep, from the
// denoiser unless Drive names ε) with, if carried, A ← S A, S the step's
// exact Jacobian (DDIMJacobian), so that A stays the derivative of the
// discrete map. The log-density and the adjoint have no DDIM step.
func (p *PFODE) ExpStep(t, t1 float64, y []float64) (int, error) {
	if p.has(LogDensity | Adjoint) {
		return 0, fmt.Errorf("DDIM carries only x and the Jacobian, not the log-density or the adjoint")
	}
	c0, err := p.coefficients(t)
	if err != nil {
		return 0, err
	}
	c1, err := p.Source.At(t1)
	if err != nil {
		return 0, err
	}
	if err := CheckDDIMTarget(c1); err != nil {
		return 0, err
	}
	want := p.Drive
	if want&(score.WantEps|score.WantScore) == 0 {
		want |= score.WantDenoiser
	}
	if p.has(Jacobian) {
		want |= score.WantFisher
	}
	x := p.X(y)
	ev, err := p.eval(c0, x, want)
	if err != nil {
		return 1, err
	}
	if a := p.Jacobians(y); a != nil {
		r, w := DDIMCoefficients(c0, c1)
		d := p.D
		for c := 0; c < p.B; c++ {
			DDIMJacobian(p.j, c0, r, w, ev.FisherOf(c))
			ac := a[c*d*d : (c+1)*d*d]
			mulAdd(p.tmp, p.j, ac, d)
			copy(ac, p.tmp)
		}
	}
	DDIMStep(x, c0, c1, ev)
	return 1, nil
}
