package models

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/graph"
)

// Parameterisation names what a score network outputs. With the forward
// kernel x = α y + σ ε (paper eq. diffusion_kernel):
//
//	PredictEps: ε̂;   PredictY: ŷ = x̂₀;   PredictV: v = α ε − σ y;
//	PredictEDM: F with ŷ = c_skip x/α + c_out F (Karras et al. 2022's
//	preconditioning, σ_data = EDMSigmaData), i.e. ε = a x + b F with
//	a = σ/(σ² + s²α²), b = −sα/√(σ² + s²α²);
//	PredictScore: the score ∇log q_t(x) = −ε/σ (score_sde's networks).
//
// All five determine the score ∇log q_t(x) = −ε/σ exactly. PredictEDM
// carries the identity map (ε ≈ x at high noise) in its skip term, so a
// network narrower than the data (a residual MLP of width < d on MNIST)
// does not have to learn a full-rank identity through its bottleneck; with
// PredictEps such a network stalls at ε̂ ≈ 0 (loss ≈ 1) for long.
type Parameterisation int

const (
	PredictEps Parameterisation = iota
	PredictY
	PredictV
	PredictEDM
	PredictScore
)

// EDMSigmaData is the data scale s of PredictEDM (EDM's default).
const EDMSigmaData = 0.5

// edmCoefficients are a, b of ε = a x + b F under PredictEDM.
func edmCoefficients(alpha, sigma float64) (a, b float64) {
	s := EDMSigmaData
	den := sigma*sigma + s*s*alpha*alpha
	return sigma / den, -s * alpha / math.Sqrt(den)
}

func (p Parameterisation) String() string {
	switch p {
	case PredictEps:
		return "eps"
	case PredictY:
		return "y"
	case PredictV:
		return "v"
	case PredictEDM:
		return "edm"
	case PredictScore:
		return "score"
	}
	return fmt.Sprintf("Parameterisation(%d)", int(p))
}

// ParseParameterisation reads "eps", "y" (also "x0"), "v", "edm" or "score".
func ParseParameterisation(s string) (Parameterisation, error) {
	switch s {
	case "eps", "epsilon":
		return PredictEps, nil
	case "y", "x0":
		return PredictY, nil
	case "v":
		return PredictV, nil
	case "edm":
		return PredictEDM, nil
	case "score":
		return PredictScore, nil
	}
	return 0, fmt.Errorf("models: parameterisation %q, want eps, y (x0), v, edm or score", s)
}

// Conversions between the parameterisations on scalars (float64), the
// oracle of the graph ones; the Tweedie conversions ε ↔ ȳ ↔ score are
// dfx/score's (host) and dfx/access's (graph).

// EpsFrom converts an output in parameterisation p at x to ε.
func EpsFrom(p Parameterisation, out, x, alpha, sigma float64) float64 {
	switch p {
	case PredictY:
		return (x - alpha*out) / sigma
	case PredictV: // ε = (σ x + α v)/(α² + σ²)
		return (sigma*x + alpha*out) / (alpha*alpha + sigma*sigma)
	case PredictEDM:
		a, b := edmCoefficients(alpha, sigma)
		return a*x + b*out
	case PredictScore:
		return -sigma * out
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
	case PredictEDM:
		a, b := edmCoefficients(alpha, sigma)
		return (eps - a*x) / b
	case PredictScore:
		return -eps / sigma
	}
	return eps
}

// Graph versions: alpha and sigma broadcast against x (e.g. [B,1] against [B,d]).

// EpsFromGraph converts a network output in parameterisation p to ε.
func EpsFromGraph(p Parameterisation, out, x, alpha, sigma *graph.Node) *graph.Node {
	switch p {
	case PredictY:
		return graph.Div(graph.Sub(x, graph.Mul(alpha, out)), sigma)
	case PredictV:
		norm := graph.Add(graph.Square(alpha), graph.Square(sigma))
		return graph.Div(graph.Add(graph.Mul(sigma, x), graph.Mul(alpha, out)), norm)
	case PredictEDM:
		s := EDMSigmaData
		den := graph.Add(graph.Square(sigma), graph.MulScalar(graph.Square(alpha), s*s))
		a := graph.Div(sigma, den)
		b := graph.Neg(graph.Div(graph.MulScalar(alpha, s), graph.Sqrt(den)))
		return graph.Add(graph.Mul(a, x), graph.Mul(b, out))
	case PredictScore:
		return graph.Neg(graph.Mul(sigma, out))
	}
	return out
}
