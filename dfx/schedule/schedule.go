// Package schedule holds the noise schedules of diffusion models: the forward
// kernel q_{t|0}(x_t|x_0) = N(α(t) x_0, σ(t)² I) (paper eq. diffusion_kernel),
// the drift f(t) = d log α/dt and the squared diffusion
// g²(t) = dσ²/dt − 2 f σ² of the forward SDE (paper eq. diffusion_sde),
// and time grids for solvers.
package schedule

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Schedule is a noise schedule on its valid time interval [TMin, TMax].
// Implementations evaluate their formulas for any t; callers that take user
// input check it first with Check.
type Schedule interface {
	// Name is the schedule's short name ("ve", "vp", "subvp", "edm", "linear", "ddpm").
	Name() string
	Alpha(t float64) float64
	Sigma(t float64) float64
	// DAlpha and DSigma are dα/dt and dσ/dt.
	DAlpha(t float64) float64
	DSigma(t float64) float64
	// Interval is the valid time interval [TMin, TMax]; TMax is the prior time T.
	Interval() (tMin, tMax float64)
}

// F is the drift coefficient f(t) = d log α/dt (paper eq. diffusion_sde).
func F(s Schedule, t float64) float64 { return s.DAlpha(t) / s.Alpha(t) }

// G2 is the squared diffusion coefficient g²(t) = dσ²/dt − 2 f(t) σ²(t).
func G2(s Schedule, t float64) float64 {
	sig := s.Sigma(t)
	return 2*sig*s.DSigma(t) - 2*F(s, t)*sig*sig
}

// SigmaT is the prior scale σ(T): PF-ODE chains start at x_T ~ N(0, σ_T² I).
func SigmaT(s Schedule) float64 {
	_, tMax := s.Interval()
	return s.Sigma(tMax)
}

// Coefficients bundles the schedule's values at one time.
type Coefficients struct {
	T, Alpha, Sigma, DAlpha, DSigma, F, G2 float64
}

// At evaluates every coefficient at t after checking t with Check.
func At(s Schedule, t float64) (Coefficients, error) {
	if err := Check(s, t); err != nil {
		return Coefficients{}, err
	}
	c := Coefficients{T: t, Alpha: s.Alpha(t), Sigma: s.Sigma(t), DAlpha: s.DAlpha(t), DSigma: s.DSigma(t)}
	c.F = c.DAlpha / c.Alpha
	c.G2 = 2*c.Sigma*c.DSigma - 2*c.F*c.Sigma*c.Sigma
	return c, nil
}

// ErrTime is wrapped by every error about a time outside a schedule's domain.
var ErrTime = errors.New("time outside the schedule's valid range")

// Check returns an error unless t is finite, inside the schedule's interval,
// and α(t) > 0, σ(t) > 0 there (the Fisher is undefined where σ = 0).
func Check(s Schedule, t float64) error {
	lo, hi := s.Interval()
	if math.IsNaN(t) || math.IsInf(t, 0) {
		return fmt.Errorf("schedule %s: t = %v is not finite: %w", s.Name(), t, ErrTime)
	}
	if t < lo || t > hi {
		return fmt.Errorf("schedule %s: t = %g outside [%g, %g]: %w", s.Name(), t, lo, hi, ErrTime)
	}
	a, sig := s.Alpha(t), s.Sigma(t)
	if !(sig > 0) || math.IsInf(sig, 0) {
		return fmt.Errorf("schedule %s: σ(%g) = %g, must be positive and finite: %w", s.Name(), t, sig, ErrTime)
	}
	if !(a > 0) || math.IsInf(a, 0) {
		return fmt.Errorf("schedule %s: α(%g) = %g, must be positive and finite: %w", s.Name(), t, a, ErrTime)
	}
	return nil
}

// Params are the overridable parameters of the named schedules; zero fields
// take the schedule's default. TMin/TMax override the valid interval.
type Params struct {
	SigmaMin, SigmaMax float64 // VE
	BetaMin, BetaMax   float64 // VP, sub-VP
	TMin, TMax         float64
}

// Names lists the schedules ByName knows.
var Names = []string{"ve", "vp", "subvp", "edm", "linear"}

// ByName builds a continuous schedule from its name and parameters.
func ByName(name string, p Params) (Schedule, error) {
	var s Schedule
	switch strings.ToLower(name) {
	case "ve":
		v := DefaultVE()
		setIf(&v.SigmaMin, p.SigmaMin)
		setIf(&v.SigmaMax, p.SigmaMax)
		setIf(&v.TMin, p.TMin)
		setIf(&v.TMax, p.TMax)
		s = v
	case "vp":
		v := DefaultVP()
		setIf(&v.BetaMin, p.BetaMin)
		setIf(&v.BetaMax, p.BetaMax)
		setIf(&v.TMin, p.TMin)
		setIf(&v.TMax, p.TMax)
		s = v
	case "subvp", "sub-vp":
		v := DefaultSubVP()
		setIf(&v.BetaMin, p.BetaMin)
		setIf(&v.BetaMax, p.BetaMax)
		setIf(&v.TMin, p.TMin)
		setIf(&v.TMax, p.TMax)
		s = v
	case "edm":
		v := DefaultEDM()
		setIf(&v.TMin, p.TMin)
		setIf(&v.TMax, p.TMax)
		s = v
	case "linear", "rf":
		v := DefaultLinear()
		setIf(&v.TMin, p.TMin)
		setIf(&v.TMax, p.TMax)
		s = v
	default:
		return nil, fmt.Errorf("schedule: unknown name %q (want one of %s)", name, strings.Join(Names, ", "))
	}
	if err := Validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

func setIf(dst *float64, v float64) {
	if v != 0 {
		*dst = v
	}
}

// Validate checks a schedule's parameters: a finite, non-empty interval on
// which α, σ and g² are positive and finite at both ends.
func Validate(s Schedule) error {
	lo, hi := s.Interval()
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) {
		return fmt.Errorf("schedule %s: invalid interval [%g, %g]", s.Name(), lo, hi)
	}
	for _, t := range []float64{lo, hi} {
		if err := Check(s, t); err != nil {
			return err
		}
		if g2 := G2(s, t); !(g2 > 0) || math.IsInf(g2, 0) {
			return fmt.Errorf("schedule %s: g²(%g) = %g, must be positive (check the parameters)", s.Name(), t, g2)
		}
	}
	return nil
}
