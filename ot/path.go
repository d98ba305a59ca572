package ot

import (
	"fmt"
	"math"
	"strings"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Node is a schedule's coefficients at one time: α, σ, the drift
// f = d log α/dt and the squared diffusion g² of the forward SDE.
type Node struct{ T, Alpha, Sigma, F, G2 float64 }

// Path is what the integrator needs of a schedule: its coefficients at the
// times a solver visits. A continuous schedule answers at any time; the
// published protocol's discrete table only at its nodes t = k/1000.
type Path interface {
	Name() string
	At(t float64) (Node, error)
	// Interval is the valid time range [TMin, TMax].
	Interval() (tMin, tMax float64)
}

// Continuous adapts a schedule.Schedule to a Path.
func Continuous(s schedule.Schedule) Path { return continuous{s} }

type continuous struct{ s schedule.Schedule }

func (c continuous) Name() string                 { return c.s.Name() }
func (c continuous) Interval() (float64, float64) { return c.s.Interval() }
func (c continuous) At(t float64) (Node, error) {
	co, err := schedule.At(c.s, t)
	if err != nil {
		return Node{}, err
	}
	return Node{T: t, Alpha: co.Alpha, Sigma: co.Sigma, F: co.F, G2: co.G2}, nil
}

// Published is the published OT script's schedule for one of "ve", "vp",
// "subvp", "edm" on the 1000-step DDPM "scaled_linear" table
// (β from 0.00085 to 0.012), at times t = k/1000:
//
//	vp:    α = √ᾱ_k, σ = √(1−ᾱ_k), f = −500 β_k, g² = 1000 β_k
//	subvp: VP's α, σ, f; g² = 1000 β_k (1 − exp(−2 b₀ t − (b₁ − b₀) t²)),
//	       b₀ = 1000 β_999, b₁ = 1000 β_0 (the script swaps β_min and β_max)
//	edm:   α = 1, σ = t, f = 0, g² = 2t
//	ve:    α = 1, σ = √t, f = 0, g² = 1
func Published(name string) (Path, error) {
	d, err := schedule.NewDDPM(schedule.ScaledLinearBetas(0.00085, 0.012, 1000))
	if err != nil {
		return nil, err
	}
	n := strings.ToLower(name)
	switch n {
	case "sub-vp":
		n = "subvp"
	case "ve", "vp", "subvp", "edm":
	default:
		return nil, fmt.Errorf("ot: published protocol has no schedule %q (ve, vp, subvp, edm)", name)
	}
	return published{name: n, d: d}, nil
}

type published struct {
	name string
	d    *schedule.DDPM
}

func (p published) Name() string                 { return p.name }
func (p published) Interval() (float64, float64) { return 0, float64(p.d.K()-1) / float64(p.d.K()) }

func (p published) At(t float64) (Node, error) {
	kf := t * float64(p.d.K())
	k := int(math.Round(kf))
	if math.Abs(kf-float64(k)) > 1e-6 || k < 0 || k >= p.d.K() {
		return Node{}, fmt.Errorf("ot: published %s schedule is defined only at t = k/%d, k < %d; got t = %g: %w",
			p.name, p.d.K(), p.d.K(), t, schedule.ErrTime)
	}
	tau := float64(k) / float64(p.d.K())
	n := Node{T: tau}
	switch p.name {
	case "vp", "subvp":
		ab := p.d.AlphaBar(k)
		n.Alpha, n.Sigma = math.Sqrt(ab), math.Sqrt(1-ab)
		n.F, n.G2 = p.d.DiscreteF(k), p.d.DiscreteG2(k)
		if p.name == "subvp" {
			kk := float64(p.d.K())
			b0, b1 := p.d.Betas[p.d.K()-1]*kk, p.d.Betas[0]*kk
			n.G2 *= 1 - math.Exp(-2*b0*tau-(b1-b0)*tau*tau)
		}
	case "edm":
		n.Alpha, n.Sigma, n.G2 = 1, tau, 2*tau
	case "ve":
		n.Alpha, n.Sigma, n.G2 = 1, math.Sqrt(tau), 1
	}
	return n, nil
}

// PublishedGrid is the published script's time grid: diffusers' DDIM
// "linspace" timesteps round(linspace(0, K−1, n)) reversed, divided by K,
// for n = steps+1 timesteps (the script uses n = 20 and takes 19 steps,
// ending at t = 0).
func PublishedGrid(steps int) ([]float64, error) {
	if steps < 1 {
		return nil, fmt.Errorf("ot: need at least 1 step, got %d", steps)
	}
	const k = 1000
	if steps > k-1 {
		return nil, fmt.Errorf("ot: published grid has at most %d steps, got %d", k-1, steps)
	}
	n := steps + 1
	ts := make([]float64, n)
	for i := range ts {
		v := math.RoundToEven(float64(k-1) * float64(i) / float64(n-1))
		ts[n-1-i] = v / k
	}
	return ts, nil
}

// frozen presents one node's α and σ as a schedule.Schedule, so that
// mixture.Eval computes the posterior for exactly these values whatever the
// path (the published table has no continuous α(t)).
type frozen struct{ alpha, sigma float64 }

func (frozen) Name() string                 { return "frozen" }
func (f frozen) Alpha(float64) float64      { return f.alpha }
func (f frozen) Sigma(float64) float64      { return f.sigma }
func (frozen) DAlpha(float64) float64       { return 0 }
func (frozen) DSigma(float64) float64       { return 0 }
func (frozen) Interval() (float64, float64) { return math.Inf(-1), math.Inf(1) }
