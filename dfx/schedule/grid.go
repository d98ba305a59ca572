package schedule

import (
	"fmt"
	"math"
)

// Grid kinds for TimeGrid.
const (
	GridUniform  = "uniform"  // uniform in t
	GridLogSigma = "logsigma" // uniform in log σ
	GridKarras   = "karras"   // Karras et al. (2022) ρ-spacing in σ, ρ = 7
	GridLogSNR   = "logsnr"   // uniform in the log-SNR λ = log(α/σ) (DPM-Solver's)
)

// TimeGrid returns M+1 decreasing times from t1 down to t0 (t1 > t0, both in
// the schedule's interval): the grid a solver walks from noise to data.
func TimeGrid(s Schedule, kind string, t0, t1 float64, m int) ([]float64, error) {
	if m < 1 {
		return nil, fmt.Errorf("time grid: need at least 1 step, got %d", m)
	}
	if !(t0 < t1) {
		return nil, fmt.Errorf("time grid: need t0 < t1, got %g, %g", t0, t1)
	}
	if err := Check(s, t0); err != nil {
		return nil, err
	}
	if err := Check(s, t1); err != nil {
		return nil, err
	}
	ts := make([]float64, m+1)
	frac := func(i int) float64 { return float64(i) / float64(m) }
	switch kind {
	case GridUniform, "":
		for i := range ts {
			ts[i] = t1 + (t0-t1)*frac(i)
		}
	case GridLogSigma, GridKarras:
		s0, s1 := s.Sigma(t0), s.Sigma(t1)
		for i := range ts {
			var sig float64
			if kind == GridLogSigma {
				sig = math.Exp(math.Log(s1) + (math.Log(s0)-math.Log(s1))*frac(i))
			} else {
				const rho = 7.0
				a, b := math.Pow(s1, 1/rho), math.Pow(s0, 1/rho)
				sig = math.Pow(a+(b-a)*frac(i), rho)
			}
			t, err := SigmaInverse(s, sig, t0, t1)
			if err != nil {
				return nil, err
			}
			ts[i] = t
		}
	case GridLogSNR:
		l0, l1 := LogSNR(s, t0), LogSNR(s, t1)
		for i := range ts {
			t, err := LogSNRInverse(s, l1+(l0-l1)*frac(i), t0, t1)
			if err != nil {
				return nil, err
			}
			ts[i] = t
		}
	default:
		return nil, fmt.Errorf("time grid: unknown kind %q (uniform, logsigma, karras, logsnr)", kind)
	}
	ts[0], ts[m] = t1, t0
	return ts, nil
}

// SigmaInverse finds t ∈ [lo, hi] with σ(t) = sig by bisection; σ must be
// increasing on [lo, hi] (true of every schedule here).
func SigmaInverse(s Schedule, sig, lo, hi float64) (float64, error) {
	slo, shi := s.Sigma(lo), s.Sigma(hi)
	if !(sig >= slo*(1-1e-12) && sig <= shi*(1+1e-12)) {
		return 0, fmt.Errorf("schedule %s: σ = %g outside [%g, %g]", s.Name(), sig, slo, shi)
	}
	for i := 0; i < 200 && hi-lo > 1e-15*math.Max(1, math.Abs(hi)); i++ {
		mid := 0.5 * (lo + hi)
		if s.Sigma(mid) < sig {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 0.5 * (lo + hi), nil
}

// LogSNR is λ(t) = log(α(t)/σ(t)), decreasing in t for every schedule here.
func LogSNR(s Schedule, t float64) float64 { return math.Log(s.Alpha(t)) - math.Log(s.Sigma(t)) }

// LogSNRInverse finds t ∈ [lo, hi] with LogSNR(t) = l by bisection; λ must
// be decreasing on [lo, hi].
func LogSNRInverse(s Schedule, l, lo, hi float64) (float64, error) {
	llo, lhi := LogSNR(s, lo), LogSNR(s, hi)
	tol := 1e-12 * math.Max(1, math.Abs(l))
	if !(l <= llo+tol && l >= lhi-tol) {
		return 0, fmt.Errorf("schedule %s: log-SNR %g outside [%g, %g]", s.Name(), l, lhi, llo)
	}
	for i := 0; i < 200 && hi-lo > 1e-15*math.Max(1, math.Abs(hi)); i++ {
		mid := 0.5 * (lo + hi)
		if LogSNR(s, mid) > l {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 0.5 * (lo + hi), nil
}
