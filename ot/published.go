package ot

import (
	"fmt"
	"math"
	"strings"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Published is the published OT script's schedule for one of "ve", "vp",
// "subvp", "edm" on the 1000-step DDPM "scaled_linear" table
// (β from 0.00085 to 0.012), at times t = k/1000:
//
//	vp:    α = √ᾱ_k, σ = √(1−ᾱ_k), f = −500 β_k, g² = 1000 β_k
//	subvp: VP's α, σ, f; g² = 1000 β_k (1 − exp(−2 b₀ t − (b₁ − b₀) t²)),
//	       b₀ = 1000 β_999, b₁ = 1000 β_0 (the script swaps β_min and β_max)
//	edm:   α = 1, σ = t, f = 0, g² = 2t
//	ve:    α = 1, σ = √t, f = 0, g² = 1
//
// It is a schedule.Table: defined only at t = k/1000 (a solver whose stages
// fall between nodes fails).
func Published(name string) (*schedule.Table, error) {
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
	nodes := make([]schedule.Coefficients, d.K())
	for k := range nodes {
		nodes[k] = publishedNode(n, d, k)
	}
	return schedule.NewTable(n, nodes)
}

// publishedNode is the published protocol's coefficients at node k,
// t = k/K. DAlpha and DSigma are set consistently with f and g²
// (α' = f α, σ' = (g² + 2 f σ²)/(2σ)); nothing here reads them.
func publishedNode(name string, d *schedule.DDPM, k int) schedule.Coefficients {
	kk := float64(d.K())
	tau := float64(k) / kk
	n := schedule.Coefficients{T: tau}
	switch name {
	case "vp", "subvp":
		ab := d.AlphaBar(k)
		n.Alpha, n.Sigma = math.Sqrt(ab), math.Sqrt(1-ab)
		n.F, n.G2 = d.DiscreteF(k), d.DiscreteG2(k)
		if name == "subvp" {
			b0, b1 := d.Betas[d.K()-1]*kk, d.Betas[0]*kk
			n.G2 *= 1 - math.Exp(-2*b0*tau-(b1-b0)*tau*tau)
		}
	case "edm":
		n.Alpha, n.Sigma, n.G2 = 1, tau, 2*tau
	case "ve":
		n.Alpha, n.Sigma, n.G2 = 1, math.Sqrt(tau), 1
	}
	n.DAlpha = n.F * n.Alpha
	if n.Sigma > 0 {
		n.DSigma = (n.G2 + 2*n.F*n.Sigma*n.Sigma) / (2 * n.Sigma)
	}
	return n
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
