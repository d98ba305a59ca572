package pfode

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Density guidance: steering PF-ODE samples so that the log-density of the
// diffused data at the moving point, ℓ(t) = log q_t(x_t), follows a chosen
// target (Karczewski, Heinonen & Garg, ICML 2025, "density guidance"), with
// the Fisher trace from any score.TraceEstimator — exact for mixtures, VJP,
// Hutchinson, or DF-TM's one network call.
//
// Along the PF-ODE dx/dt = v, ℓ changes at the natural rate
//
//	r(x, t) = −div v = −f(t) d − ½ g²(t) tr F_t(x)          (LogDensityRate)
//
// For any velocity u, the Fokker–Planck equation of q_t under v gives
// d/dt log q_t(x_t) = −div v + (u − v)·∇log q_t. With
//
//	u = v + λ s/‖s‖²,   s = ∇log q_t(x),
//
// the rate becomes r + λ: to make ℓ follow a target rate R, take
// λ = R − r. The trace sets λ; an error ε in tr F becomes an error −½ g² ε
// in the rate, which, integrated over the guided times, is how far the
// achieved log q misses the target (½ g² is large near t = 0, and DF-TM's
// error grows there as α²/σ⁴: Until stops guiding before).

// DensityTarget is the log-density rate R(t, ℓ) = dℓ/dt a guided sample
// follows, given its tracked ℓ and its natural rate r.
type DensityTarget interface {
	Rate(t, ell, natural float64) float64
}

// Offset adds PerUnitTime nats of log-density for every unit of time
// sampled (t decreasing), on top of the natural rate: R = r − PerUnitTime,
// λ = −PerUnitTime. Positive raises log q (smoother, more typical
// images), negative lowers it. λ needs no trace here: the trace only
// tracks ℓ.
type Offset struct{ PerUnitTime float64 }

// Rate implements DensityTarget.
func (o Offset) Rate(_, _, natural float64) float64 { return natural - o.PerUnitTime }

// Level holds ℓ on a curve Level(t) (e.g. a quantile of log q_t under q_t,
// Quantiles.Level): R = Level'(t) + Gain (ℓ − Level(t)). A sample that
// starts off the curve returns to it as t decreases, the error shrinking
// as exp(−Gain (T − t)); Gain 0 only follows the curve's slope.
type Level struct {
	At    func(t float64) float64
	Slope func(t float64) float64
	Gain  float64
}

// Rate implements DensityTarget.
func (l Level) Rate(t, ell, _ float64) float64 {
	return l.Slope(t) + l.Gain*(ell-l.At(t))
}

// DensityGuide steers a PFODE's samples (PFODE.Guide): the velocity
// becomes u = v + λ_eff s/‖s‖² with s = ∇log q_t(x) from the model, and the
// carried log-density component (Carry LogDensity) the tracked ℓ − ℓ₀,
// changing at the rate r + λ_eff, which is d/dt log q_t(x_t) exactly when
// the model's trace is exact and its score is the gradient of the density
// tracked (an exact mixture's is; a network's score need not be that of its
// own PF-ODE density, and then ℓ books a change the samples do not get:
// scripts/density-miss.sh). λ = R − r is what the Target asks;
//
//	λ_eff = λ / (1 + ρ⁴)^¼,   ρ = |λ| / (K ‖s‖²),   K = Cap · ½ g²(t),
//
// is λ itself wherever the request is feasible (ρ ≪ 1: at ρ = ½ it keeps
// 99.8 % of λ) and bounds the guidance speed |λ_eff|/‖s‖ by K‖s‖, Cap times
// the PF-ODE's own score drift ½ g²‖s‖, elsewhere. A target can ask for the impossible — more
// log-density than q_t has at its mode, or a change where s ≈ 0 — and
// λ s/‖s‖² grows without bound there; λ_eff keeps the field continuous
// (it vanishes with s, so a sample held at a mode rests there instead of
// chattering across it), and ℓ stays exact whatever λ_eff is, since
// d/dt log q_t(x_t) = r + (u − v)·s for any velocity u.
type DensityGuide struct {
	Target DensityTarget
	// Start is ℓ at the start of the solve, one per row (log q_{t0}(x_{t0})
	// or its estimate, e.g. the prior's log-density at T): the tracked
	// ℓ = Start + Δ is what a Level target compares with its curve. Nil
	// means zeros (enough for an Offset).
	Start []float64
	// Until: no guidance at t < Until (λ = 0; ℓ is still tracked at the
	// natural rate).
	Until float64
	// Cap is the speed bound's factor (0 means DefaultCap).
	Cap float64
	// Statistics over the guided evaluations (rows × stages): how many,
	// the largest |λ| asked, how many achieved less than half of it
	// (Limited), and how many had s = 0 (no direction to steer).
	Evals, Limited, Zero int
	MaxLambda            float64
}

// DefaultCap is DensityGuide's default speed bound: the guidance may move a
// sample up to ten times as fast as the PF-ODE's score drift.
const DefaultCap = 10

// steer adds the guidance to the velocity rows v and the log-density rates
// dl (both set to the unguided values) at the points whose tracked
// log-density change is delta, from the model's scores.
func (g *DensityGuide) steer(c schedule.Coefficients, delta []float64, s, v *mat.Dense, dl []float64) error {
	if g.Target == nil || c.T < g.Until {
		return nil
	}
	if g.Start != nil && len(g.Start) != len(dl) {
		return fmt.Errorf("pfode: density guide has %d start values for %d points", len(g.Start), len(dl))
	}
	capv := g.Cap
	if capv <= 0 {
		capv = DefaultCap
	}
	k := capv * 0.5 * c.G2
	_, d := s.Dims()
	for i, r := range dl {
		ell := delta[i]
		if g.Start != nil {
			ell += g.Start[i]
		}
		lambda := g.Target.Rate(c.T, ell, r) - r
		if math.IsNaN(lambda) || math.IsInf(lambda, 0) {
			return fmt.Errorf("pfode: density target asked a rate of %v at t = %g", lambda+r, c.T)
		}
		g.Evals++
		g.MaxLambda = max(g.MaxLambda, math.Abs(lambda))
		sr, vr := s.RawRowView(i)[:d], v.RawRowView(i)[:d]
		n2 := floats.Dot(sr, sr)
		if n2 == 0 || math.IsInf(n2, 0) {
			g.Zero++
			continue
		}
		rho := math.Abs(lambda) / (k * n2)
		eff := lambda / math.Sqrt(math.Sqrt(1+rho*rho*rho*rho))
		if math.Abs(eff) < 0.5*math.Abs(lambda) {
			g.Limited++
		}
		floats.AddScaled(vr, eff/n2, sr)
		dl[i] = r + eff
	}
	return nil
}

// Quantiles are quantiles of ℓ = log q_t(X_t), X_t ~ q_t, on a time grid:
// the levels Level targets. Values[i][k] is the Ps[k]-quantile at Times[i].
type Quantiles struct {
	Times  []float64
	Ps     []float64
	Values [][]float64
	// How says how the quantiles were obtained (exact samples of q_t and
	// the closed-form log q_t, or an unguided reference batch carried along
	// the PF-ODE with a trace estimator).
	How string
}

// QuantilesOf computes the empirical quantiles ps of each row of ells
// (ells[i] holds ℓ at times[i] over a batch of samples from q_{times[i]};
// type 7, the linear interpolation of R and NumPy).
func QuantilesOf(times []float64, ells [][]float64, ps []float64, how string) (*Quantiles, error) {
	if len(times) != len(ells) || len(times) < 2 {
		return nil, fmt.Errorf("pfode: quantiles need ℓ at ≥ 2 times, got %d times and %d rows", len(times), len(ells))
	}
	if err := checkGrid(times); err != nil {
		return nil, err
	}
	for _, p := range ps {
		if !(p > 0 && p < 1) {
			return nil, fmt.Errorf("pfode: quantile level %g outside (0, 1)", p)
		}
	}
	q := &Quantiles{Times: append([]float64(nil), times...), Ps: append([]float64(nil), ps...), How: how}
	for i, row := range ells {
		if len(row) < 2 {
			return nil, fmt.Errorf("pfode: %d samples at t = %g, need ≥ 2", len(row), times[i])
		}
		q.Values = append(q.Values, EmpiricalQuantiles(row, ps))
	}
	return q, nil
}

// EmpiricalQuantiles are the quantiles ps of the values v (type 7, the
// linear interpolation of R and NumPy); v is not modified.
func EmpiricalQuantiles(v, ps []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	vals := make([]float64, len(ps))
	for k, p := range ps {
		h := p * float64(len(s)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(s)-1)
		vals[k] = s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	return vals
}

// Level is the target that holds a sample at the k-th quantile: the
// piecewise-linear curve through Values[·][k] and its slope, with gain.
// Outside the grid it is held at the end values.
func (q *Quantiles) Level(k int, gain float64) Level {
	ts, vs := q.Times, make([]float64, len(q.Times))
	for i := range vs {
		vs[i] = q.Values[i][k]
	}
	// seg finds i with t between ts[i] and ts[i+1] (either direction); at
	// a node it takes the segment that follows it in the grid's direction,
	// the one a step from that node walks.
	seg := func(t float64) (int, float64) {
		n := len(ts)
		dec := ts[n-1] < ts[0]
		i := sort.Search(n, func(j int) bool {
			if dec {
				return ts[j] < t
			}
			return ts[j] > t
		})
		i = min(max(i-1, 0), n-2)
		w := (t - ts[i]) / (ts[i+1] - ts[i])
		return i, w
	}
	at := func(t float64) float64 {
		i, w := seg(t)
		w = min(max(w, 0), 1)
		return vs[i] + w*(vs[i+1]-vs[i])
	}
	slope := func(t float64) float64 {
		i, _ := seg(t)
		return (vs[i+1] - vs[i]) / (ts[i+1] - ts[i])
	}
	return Level{At: at, Slope: slope, Gain: gain}
}
