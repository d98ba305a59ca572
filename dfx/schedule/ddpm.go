package schedule

import (
	"fmt"
	"math"
)

// DDPM is a discrete-time schedule given by a β table β_0 … β_{K−1}:
// ᾱ_k = Π_{j≤k} (1 − β_j), α_k = √ᾱ_k, σ_k = √(1 − ᾱ_k), at times t_k = k/K.
// Between nodes log ᾱ is interpolated linearly, which makes it a continuous
// schedule: f is piecewise constant, f = ½ K log(1 − β_k) on (t_{k−1}, t_k],
// and g² = −2f (σ² = 1 − α² makes g² = −2f exactly). The published OT code
// instead uses f = −½ K β_k and g² = K β_k (first order in β); see
// DiscreteF and DiscreteG2.
type DDPM struct {
	Betas    []float64
	logABar  []float64 // log ᾱ_k
	nodeTime float64   // 1/K
}

// NewDDPM checks the table (0 < β < 1, finite, at least two entries).
func NewDDPM(betas []float64) (*DDPM, error) {
	if len(betas) < 2 {
		return nil, fmt.Errorf("ddpm: need at least 2 betas, got %d", len(betas))
	}
	d := &DDPM{Betas: append([]float64(nil), betas...), logABar: make([]float64, len(betas)), nodeTime: 1 / float64(len(betas))}
	acc := 0.0
	for k, b := range betas {
		if !(b > 0 && b < 1) {
			return nil, fmt.Errorf("ddpm: β[%d] = %g, must lie in (0, 1)", k, b)
		}
		acc += math.Log1p(-b)
		d.logABar[k] = acc
	}
	return d, nil
}

// ScaledLinearBetas is the Stable Diffusion / published-OT-code table:
// β_k = (linspace(√βstart, √βend, K))².
func ScaledLinearBetas(betaStart, betaEnd float64, k int) []float64 {
	out := make([]float64, k)
	a, b := math.Sqrt(betaStart), math.Sqrt(betaEnd)
	for i := range out {
		s := a + (b-a)*float64(i)/float64(k-1)
		out[i] = s * s
	}
	return out
}

// K is the number of discrete steps.
func (d *DDPM) K() int { return len(d.Betas) }

// AlphaBar is ᾱ_k for step k.
func (d *DDPM) AlphaBar(k int) float64 { return math.Exp(d.logABar[k]) }

// DiscreteF is the published code's drift at node k: −½ K β_k.
func (d *DDPM) DiscreteF(k int) float64 { return -0.5 * float64(d.K()) * d.Betas[k] }

// DiscreteG2 is the published code's g² at node k: K β_k.
func (d *DDPM) DiscreteG2(k int) float64 { return float64(d.K()) * d.Betas[k] }

// segment returns the node index k with t ∈ (t_{k−1}, t_k] (clamped) and the
// slope of log ᾱ there.
func (d *DDPM) segment(t float64) (k int, slope float64) {
	k = int(math.Ceil(t/d.nodeTime - 1e-12))
	if k < 1 {
		k = 1
	}
	if k > d.K()-1 {
		k = d.K() - 1
	}
	return k, (d.logABar[k] - d.logABar[k-1]) / d.nodeTime
}

func (d *DDPM) logAlphaBar(t float64) float64 {
	k, slope := d.segment(t)
	return d.logABar[k] + slope*(t-float64(k)*d.nodeTime)
}

func (d *DDPM) Name() string             { return "ddpm" }
func (d *DDPM) Alpha(t float64) float64  { return math.Exp(0.5 * d.logAlphaBar(t)) }
func (d *DDPM) Sigma(t float64) float64  { return math.Sqrt(-math.Expm1(d.logAlphaBar(t))) }
func (d *DDPM) DAlpha(t float64) float64 { _, s := d.segment(t); return 0.5 * s * d.Alpha(t) }
func (d *DDPM) DSigma(t float64) float64 {
	_, s := d.segment(t)
	ab := math.Exp(d.logAlphaBar(t))
	return -0.5 * s * ab / d.Sigma(t)
}

// Interval is [0, (K−1)/K]: the nodes t_k = k/K of the table.
func (d *DDPM) Interval() (float64, float64) { return 0, float64(d.K()-1) * d.nodeTime }
