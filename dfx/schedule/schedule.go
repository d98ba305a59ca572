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

// Names lists the schedules New and ByName know.
var Names = []string{"ve", "vp", "subvp", "edm", "linear"}

// Parameter names, as New takes them (and the command line spells them).
const (
	ParamSigmaMin = "sigma-min" // VE
	ParamSigmaMax = "sigma-max" // VE
	ParamBetaMin  = "beta-min"  // VP, sub-VP
	ParamBetaMax  = "beta-max"  // VP, sub-VP
	ParamTMin     = "t-min"     // every schedule: the valid interval
	ParamTMax     = "t-max"
)

// defaults returns the named schedule at its defaults and the addresses of
// its parameters by name.
func defaults(name string) (Schedule, map[string]*float64, error) {
	switch strings.ToLower(name) {
	case "ve":
		v := DefaultVE()
		return &v, map[string]*float64{ParamSigmaMin: &v.SigmaMin, ParamSigmaMax: &v.SigmaMax, ParamTMin: &v.TMin, ParamTMax: &v.TMax}, nil
	case "vp":
		v := DefaultVP()
		return &v, map[string]*float64{ParamBetaMin: &v.BetaMin, ParamBetaMax: &v.BetaMax, ParamTMin: &v.TMin, ParamTMax: &v.TMax}, nil
	case "subvp", "sub-vp":
		v := DefaultSubVP()
		return &v, map[string]*float64{ParamBetaMin: &v.BetaMin, ParamBetaMax: &v.BetaMax, ParamTMin: &v.TMin, ParamTMax: &v.TMax}, nil
	case "edm":
		v := DefaultEDM()
		return &v, map[string]*float64{ParamTMin: &v.TMin, ParamTMax: &v.TMax}, nil
	case "linear", "rf":
		v := DefaultLinear()
		return &v, map[string]*float64{ParamTMin: &v.TMin, ParamTMax: &v.TMax}, nil
	}
	return nil, nil, fmt.Errorf("schedule: unknown name %q (want one of %s)", name, strings.Join(Names, ", "))
}

// Takes reports whether the named schedule has the parameter.
func Takes(name, param string) bool {
	_, ps, err := defaults(name)
	_, ok := ps[param]
	return err == nil && ok
}

// Takers lists the schedules (of Names) that take the parameter.
func Takers(param string) []string {
	var out []string
	for _, n := range Names {
		if Takes(n, param) {
			out = append(out, n)
		}
	}
	return out
}

// New builds the named continuous schedule: parameters absent from set keep
// their defaults; a parameter the schedule does not take is an error naming
// it (it would be ignored); the result is checked with Validate.
func New(name string, set map[string]float64) (Schedule, error) {
	ptr, ps, err := defaults(name)
	if err != nil {
		return nil, err
	}
	for k, v := range set {
		dst, ok := ps[k]
		if !ok {
			return nil, fmt.Errorf("schedule %s: takes no parameter %q (it would be ignored)", name, k)
		}
		*dst = v
	}
	s := deref(ptr)
	if err := Validate(s); err != nil {
		return nil, err
	}
	return s, nil
}

// deref returns the schedule value a defaults pointer holds.
func deref(p Schedule) Schedule {
	switch v := p.(type) {
	case *VE:
		return *v
	case *VP:
		return *v
	case *SubVP:
		return *v
	case *EDM:
		return *v
	case *Linear:
		return *v
	}
	return p
}

// ByName is New with Params' non-zero fields set; a non-zero field the
// named schedule does not take is an error (it would be ignored).
func ByName(name string, p Params) (Schedule, error) {
	set := map[string]float64{}
	for k, v := range map[string]float64{
		ParamSigmaMin: p.SigmaMin, ParamSigmaMax: p.SigmaMax, ParamBetaMin: p.BetaMin, ParamBetaMax: p.BetaMax, ParamTMin: p.TMin, ParamTMax: p.TMax,
	} {
		if v != 0 {
			set[k] = v
		}
	}
	return New(name, set)
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
