package pfode

import (
	"context"
	"fmt"
	"math"
)

// Adaptive configures SolveAdaptive.
type Adaptive struct {
	// Tableau is an embedded pair (BErr set); nil means Dopri5.
	Tableau *Tableau
	// RTol and ATol bound the local error of every component i:
	// |err_i| ≲ ATol + RTol·max(|y_i|, |y'_i|) in the RMS norm (Hairer,
	// Nørsett & Wanner, Solving ODEs I, II.4). Zero means 1e-6 and 1e-9.
	RTol, ATol float64
	// H0 is the magnitude of the first step; zero chooses it from the
	// derivative at the start (Hairer et al. II.4, at the cost of one
	// evaluation).
	H0 float64
	// MaxSteps bounds accepted plus rejected steps; zero means 100 000.
	MaxSteps int
	// Observe, if set, is called after every accepted step.
	Observe Observer
}

// Step-size control: h ← h · clamp(safety · ‖err‖^(−1/(q+1)), minFactor, maxFactor),
// q the order of the embedded solution.
const (
	safety    = 0.9
	minFactor = 0.2
	maxFactor = 10.0
)

// SolveAdaptive integrates sys from t0 to t1 (either direction) with an
// embedded Runge–Kutta pair under step-size control, overwriting y (the state
// at t0) with the state at t1. Stats count accepted and rejected steps and
// every evaluation of the system (NFE).
func SolveAdaptive(ctx context.Context, sys System, t0, t1 float64, y []float64, opt Adaptive) (Stats, error) {
	var st Stats
	tb, err := opt.tableau(sys, t0, t1, y)
	if err != nil || t0 == t1 {
		return st, err
	}
	rtol, atol, maxSteps, err := opt.limits()
	if err != nil {
		return st, err
	}
	n := len(y)
	w := newWork(n, tb.Stages())
	yNew, eb := make([]float64, n), tb.errorWeights()
	dir := math.Copysign(1, t1-t0)
	st.NFE++
	if err := sys.Deriv(t0, y, w.k[0]); err != nil {
		return st, fmt.Errorf("pfode: adaptive start t = %g: %w", t0, err)
	}
	h := math.Abs(opt.H0)
	if h == 0 {
		if h, err = initialStep(sys, t0, dir, math.Abs(t1-t0), y, w.k[0], w.ys, yNew, tb.P, rtol, atol); err != nil {
			return st, err
		}
		st.NFE++
	}
	h = math.Min(h, math.Abs(t1-t0))
	errExp := -1 / float64(tb.P) // the embedded solution has order P−1
	t := t0
	for t != t1 {
		if ctx != nil {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		if st.Steps+st.Rejected >= maxSteps {
			return st, fmt.Errorf("pfode: %d steps without reaching t = %g (at t = %g, h = %g)", maxSteps, t1, t, h)
		}
		tNext, last := t+dir*h, false
		if math.Abs(t1-t) <= h*(1+1e-12) {
			tNext, last = t1, true
		}
		hs := tNext - t
		nfe, err := tb.stages(sys, t, tNext, y, w, true)
		st.NFE += nfe
		if err != nil {
			return st, fmt.Errorf("pfode: %s at t = %g, h = %g: %w", tb.Label, t, hs, err)
		}
		copy(yNew, y)
		combine(yNew, hs, tb.B, w.k)
		en := errorNorm(hs, eb, w.k, y, yNew, rtol, atol)
		if math.IsNaN(en) || math.IsInf(en, 0) {
			return st, fmt.Errorf("pfode: %s: non-finite error estimate at t = %g, h = %g", tb.Label, t, hs)
		}
		factor := stepFactor(en, errExp)
		if en > 1 {
			st.Rejected++
			h = math.Abs(hs) * math.Min(1, factor)
			if h <= 1e-14*math.Max(1, math.Abs(t)) {
				return st, fmt.Errorf("pfode: step size underflow at t = %g", t)
			}
			continue
		}
		copy(y, yNew)
		t = tNext
		if last {
			t = t1
		}
		st.Steps++
		if err := tb.nextK0(sys, t, t1, y, w, &st); err != nil {
			return st, err
		}
		if opt.Observe != nil {
			if err := opt.Observe(st.Steps, t, y); err != nil {
				return st, err
			}
		}
		h = math.Abs(hs) * factor
	}
	return st, nil
}

// errorWeights are the weights B − BErr of the embedded error estimate.
func (tb *Tableau) errorWeights() []float64 {
	eb := make([]float64, len(tb.B))
	for s := range eb {
		eb[s] = tb.B[s] - tb.BErr[s]
	}
	return eb
}

// stepFactor is the step-size controller's factor for an error norm en:
// safety · en^errExp, clamped to [minFactor, maxFactor] (maxFactor for en = 0).
func stepFactor(en, errExp float64) float64 {
	if en > 0 {
		return math.Min(maxFactor, math.Max(minFactor, safety*math.Pow(en, errExp)))
	}
	return maxFactor
}

// nextK0 sets w.k[0] = f(t, y) after an accepted step: the last stage of a
// first-same-as-last pair, or a new evaluation (none at the end, t = t1).
func (tb *Tableau) nextK0(sys System, t, t1 float64, y []float64, w *work, st *Stats) error {
	if tb.FSAL {
		last := len(w.k) - 1
		w.k[0], w.k[last] = w.k[last], w.k[0]
	} else if t != t1 {
		st.NFE++
		if err := sys.Deriv(t, y, w.k[0]); err != nil {
			return fmt.Errorf("pfode: at t = %g: %w", t, err)
		}
	}
	return nil
}

// tableau is the embedded pair to use, after checking the state's length
// and the times.
func (opt Adaptive) tableau(sys System, t0, t1 float64, y []float64) (*Tableau, error) {
	tb := opt.Tableau
	if tb == nil {
		tb = Dopri5
	}
	if len(tb.BErr) != len(tb.B) {
		return nil, fmt.Errorf("pfode: %s has no embedded error estimate", tb.Label)
	}
	if len(y) != sys.Len() {
		return nil, fmt.Errorf("pfode: state of length %d, system of length %d", len(y), sys.Len())
	}
	if math.IsNaN(t0) || math.IsNaN(t1) || math.IsInf(t0, 0) || math.IsInf(t1, 0) {
		return nil, fmt.Errorf("pfode: times must be finite, got %g → %g", t0, t1)
	}
	return tb, nil
}

// limits are the tolerances and the step bound, defaults filled in.
func (opt Adaptive) limits() (rtol, atol float64, maxSteps int, err error) {
	rtol, atol = opt.RTol, opt.ATol
	if rtol == 0 {
		rtol = 1e-6
	}
	if atol == 0 {
		atol = 1e-9
	}
	if !(rtol > 0 && atol >= 0) {
		return 0, 0, 0, fmt.Errorf("pfode: need rtol > 0 and atol ≥ 0, got %g, %g", rtol, atol)
	}
	maxSteps = opt.MaxSteps
	if maxSteps == 0 {
		maxSteps = 100_000
	}
	return rtol, atol, maxSteps, nil
}

// errorNorm is the RMS over i of (h Σ_s e_s k_s,i) / (atol + rtol·max(|y_i|, |y'_i|)).
func errorNorm(h float64, e []float64, k [][]float64, y, yNew []float64, rtol, atol float64) float64 {
	sum := 0.0
	for i := range y {
		v := 0.0
		for s, es := range e {
			if es != 0 {
				v += es * k[s][i]
			}
		}
		sc := atol + rtol*math.Max(math.Abs(y[i]), math.Abs(yNew[i]))
		r := h * v / sc
		sum += r * r
	}
	return math.Sqrt(sum / float64(len(y)))
}

// initialStep is Hairer, Nørsett & Wanner's starting step (Solving ODEs I,
// II.4): h = min(100 h₀, (0.01 / max(d₁, d₂))^{1/p}), h₀ = 0.01 d₀/d₁, with
// d₀ = ‖y‖, d₁ = ‖F(t, y)‖, d₂ = ‖F(t + h₀, y + h₀ F) − F(t, y)‖ / h₀ in the
// tolerance-scaled RMS norm. It costs one evaluation.
func initialStep(sys System, t, dir, span float64, y, f0, y1, f1 []float64, p int, rtol, atol float64) (float64, error) {
	norm := func(v []float64) float64 {
		s := 0.0
		for i, x := range v {
			r := x / (atol + rtol*math.Abs(y[i]))
			s += r * r
		}
		return math.Sqrt(s / float64(len(v)))
	}
	d0, d1 := norm(y), norm(f0)
	h0 := 1e-6
	if d0 >= 1e-5 && d1 >= 1e-5 {
		h0 = 0.01 * d0 / d1
	}
	h0 = math.Min(h0, span)
	for i := range y1 {
		y1[i] = y[i] + dir*h0*f0[i]
	}
	if err := sys.Deriv(t+dir*h0, y1, f1); err != nil {
		return 0, fmt.Errorf("pfode: initial step at t = %g: %w", t+dir*h0, err)
	}
	for i := range f1 {
		f1[i] -= f0[i]
	}
	d2 := norm(f1) / h0
	h1 := math.Max(1e-6, h0*1e-3)
	if m := math.Max(d1, d2); m > 1e-15 {
		h1 = math.Pow(0.01/m, 1/float64(p))
	}
	return math.Min(100*h0, h1), nil
}
