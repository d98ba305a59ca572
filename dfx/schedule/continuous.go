package schedule

import (
	"fmt"
	"math"
)

// VE is the variance-exploding schedule (Song & Ermon): α = 1,
// σ(t) = σ_min (σ_max/σ_min)^t.
type VE struct{ SigmaMin, SigmaMax, TMin, TMax float64 }

// DefaultVE has σ_min = 0.01, σ_max = 50 on t ∈ [1e-5, 1].
func DefaultVE() VE { return VE{SigmaMin: 0.01, SigmaMax: 50, TMin: 1e-5, TMax: 1} }

func (VE) Name() string                   { return "ve" }
func (VE) Alpha(float64) float64          { return 1 }
func (VE) DAlpha(float64) float64         { return 0 }
func (s VE) Sigma(t float64) float64      { return s.SigmaMin * math.Pow(s.SigmaMax/s.SigmaMin, t) }
func (s VE) DSigma(t float64) float64     { return s.Sigma(t) * math.Log(s.SigmaMax/s.SigmaMin) }
func (s VE) Interval() (float64, float64) { return s.TMin, s.TMax }
func (s VE) String() string {
	return fmt.Sprintf("VE(σ_min=%g, σ_max=%g, t∈[%g,%g])", s.SigmaMin, s.SigmaMax, s.TMin, s.TMax)
}

// VP is the variance-preserving schedule (DDPM in continuous time):
// α(t) = exp(−¼ t² (β_max−β_min) − ½ t β_min), σ = √(1−α²).
type VP struct{ BetaMin, BetaMax, TMin, TMax float64 }

// DefaultVP has β_min = 0.1, β_max = 20 on t ∈ [1e-5, 1].
func DefaultVP() VP { return VP{BetaMin: 0.1, BetaMax: 20, TMin: 1e-5, TMax: 1} }

// logAlpha is −¼ t² (β_max−β_min) − ½ t β_min; its derivative is −β(t)/2.
func (s VP) logAlpha(t float64) float64 {
	return -0.25*t*t*(s.BetaMax-s.BetaMin) - 0.5*t*s.BetaMin
}

// Beta is β(t) = β_min + t (β_max − β_min).
func (s VP) Beta(t float64) float64 { return s.BetaMin + t*(s.BetaMax-s.BetaMin) }

func (VP) Name() string              { return "vp" }
func (s VP) Alpha(t float64) float64 { return math.Exp(s.logAlpha(t)) }
func (s VP) DAlpha(t float64) float64 {
	return -0.5 * s.Beta(t) * s.Alpha(t)
}

// Sigma uses −expm1(2 log α) so that σ keeps full precision for small t.
func (s VP) Sigma(t float64) float64 { return math.Sqrt(-math.Expm1(2 * s.logAlpha(t))) }

// DSigma is −α α'/σ = β α² / (2σ).
func (s VP) DSigma(t float64) float64 {
	a := s.Alpha(t)
	return 0.5 * s.Beta(t) * a * a / s.Sigma(t)
}
func (s VP) Interval() (float64, float64) { return s.TMin, s.TMax }
func (s VP) String() string {
	return fmt.Sprintf("VP(β_min=%g, β_max=%g, t∈[%g,%g])", s.BetaMin, s.BetaMax, s.TMin, s.TMax)
}

// SubVP is the sub-VP schedule of score_sde: VP's α and σ = 1 − α².
type SubVP struct{ BetaMin, BetaMax, TMin, TMax float64 }

// DefaultSubVP has β_min = 0.1, β_max = 20 on t ∈ [1e-5, 1].
func DefaultSubVP() SubVP { return SubVP{BetaMin: 0.1, BetaMax: 20, TMin: 1e-5, TMax: 1} }

func (s SubVP) vp() VP                  { return VP{s.BetaMin, s.BetaMax, s.TMin, s.TMax} }
func (SubVP) Name() string              { return "subvp" }
func (s SubVP) Alpha(t float64) float64 { return s.vp().Alpha(t) }
func (s SubVP) DAlpha(t float64) float64 {
	return s.vp().DAlpha(t)
}
func (s SubVP) Sigma(t float64) float64 { return -math.Expm1(2 * s.vp().logAlpha(t)) }

// DSigma is −2 α α' = β α².
func (s SubVP) DSigma(t float64) float64 {
	a := s.Alpha(t)
	return s.vp().Beta(t) * a * a
}
func (s SubVP) Interval() (float64, float64) { return s.TMin, s.TMax }
func (s SubVP) String() string {
	return fmt.Sprintf("subVP(β_min=%g, β_max=%g, t∈[%g,%g])", s.BetaMin, s.BetaMax, s.TMin, s.TMax)
}

// EDM is the schedule of Karras et al. (2022): α = 1, σ = t.
type EDM struct{ TMin, TMax float64 }

// DefaultEDM is t ∈ [0.002, 80].
func DefaultEDM() EDM { return EDM{TMin: 0.002, TMax: 80} }

func (EDM) Name() string                   { return "edm" }
func (EDM) Alpha(float64) float64          { return 1 }
func (EDM) DAlpha(float64) float64         { return 0 }
func (EDM) Sigma(t float64) float64        { return t }
func (EDM) DSigma(float64) float64         { return 1 }
func (s EDM) Interval() (float64, float64) { return s.TMin, s.TMax }
func (s EDM) String() string               { return fmt.Sprintf("EDM(t∈[%g,%g])", s.TMin, s.TMax) }

// Linear is the rectified-flow interpolation α = 1 − t, σ = t.
type Linear struct{ TMin, TMax float64 }

// DefaultLinear is t ∈ [1e-5, 1 − 1e-5].
func DefaultLinear() Linear { return Linear{TMin: 1e-5, TMax: 1 - 1e-5} }

func (Linear) Name() string                   { return "linear" }
func (Linear) Alpha(t float64) float64        { return 1 - t }
func (Linear) DAlpha(float64) float64         { return -1 }
func (Linear) Sigma(t float64) float64        { return t }
func (Linear) DSigma(float64) float64         { return 1 }
func (s Linear) Interval() (float64, float64) { return s.TMin, s.TMax }
func (s Linear) String() string               { return fmt.Sprintf("Linear(t∈[%g,%g])", s.TMin, s.TMax) }
