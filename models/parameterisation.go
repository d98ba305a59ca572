package models

import (
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
)

// Parameterisation names what a score network outputs. With the forward
// kernel x = α y + σ ε (paper eq. diffusion_kernel):
//
//	PredictEps: ε̂;   PredictY: ŷ = x̂₀;   PredictV: v = α ε − σ y.
//
// All three determine the score ∇log q_t(x) = −ε/σ exactly.
type Parameterisation int

const (
	PredictEps Parameterisation = iota
	PredictY
	PredictV
)

func (p Parameterisation) String() string {
	switch p {
	case PredictEps:
		return "eps"
	case PredictY:
		return "y"
	case PredictV:
		return "v"
	}
	return fmt.Sprintf("Parameterisation(%d)", int(p))
}

// ParseParameterisation reads "eps", "y" (also "x0") or "v".
func ParseParameterisation(s string) (Parameterisation, error) {
	switch s {
	case "eps", "epsilon":
		return PredictEps, nil
	case "y", "x0":
		return PredictY, nil
	case "v":
		return PredictV, nil
	}
	return 0, fmt.Errorf("models: parameterisation %q, want eps, y or v", s)
}

// Conversions on scalars (float64), used by tests and host code.

// EpsFrom converts an output in parameterisation p at x to ε.
func EpsFrom(p Parameterisation, out, x, alpha, sigma float64) float64 {
	switch p {
	case PredictY:
		return (x - alpha*out) / sigma
	case PredictV: // ε = (σ x + α v)/(α² + σ²)
		return (sigma*x + alpha*out) / (alpha*alpha + sigma*sigma)
	}
	return out
}

// FromEps converts ε at x to parameterisation p.
func FromEps(p Parameterisation, eps, x, alpha, sigma float64) float64 {
	switch p {
	case PredictY:
		return (x - sigma*eps) / alpha
	case PredictV:
		y := (x - sigma*eps) / alpha
		return alpha*eps - sigma*y
	}
	return eps
}

// ScoreFromEps is ∇log q_t = −ε/σ.
func ScoreFromEps(eps, sigma float64) float64 { return -eps / sigma }

// EpsFromScore is ε = −σ ∇log q_t.
func EpsFromScore(score, sigma float64) float64 { return -sigma * score }

// Graph versions: alpha and sigma broadcast against x (e.g. [B,1] against [B,d]).

// EpsFromGraph converts a network output in parameterisation p to ε.
func EpsFromGraph(p Parameterisation, out, x, alpha, sigma *graph.Node) *graph.Node {
	switch p {
	case PredictY:
		return graph.Div(graph.Sub(x, graph.Mul(alpha, out)), sigma)
	case PredictV:
		norm := graph.Add(graph.Square(alpha), graph.Square(sigma))
		return graph.Div(graph.Add(graph.Mul(sigma, x), graph.Mul(alpha, out)), norm)
	}
	return out
}

// YFromEpsGraph is the denoiser ȳ = (x − σ ε)/α.
func YFromEpsGraph(eps, x, alpha, sigma *graph.Node) *graph.Node {
	return graph.Div(graph.Sub(x, graph.Mul(sigma, eps)), alpha)
}

// ScoreFromEpsGraph is −ε/σ.
func ScoreFromEpsGraph(eps, sigma *graph.Node) *graph.Node {
	return graph.Neg(graph.Div(eps, sigma))
}
