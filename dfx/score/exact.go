package score

import (
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Exact is a mixture (Dirac or Gaussian components, float64) as a Model, a
// TraceEstimator and a FisherOperator: its exact score, denoiser, trace
// (Prop. trace_matching), Fisher matrices and products (Props.
// analytic_dirac, analytic_general), the reference every learned quantity
// is scored against.
type Exact struct{ Mixture mixture.Mixture }

// Eval implements Model. The native output is the score, or the denoiser
// alone when want asks for the denoiser and neither the score nor ε; ε is
// −σ times the score.
func (e Exact) Eval(c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error) {
	var w mixture.What
	if want&(WantScore|WantEps) != 0 || want&WantDenoiser == 0 {
		w |= mixture.Score
	}
	if want&WantDenoiser != 0 {
		w |= mixture.Denoiser
	}
	if want&WantTrace != 0 {
		w |= mixture.Trace
	}
	if want&WantFisher != 0 {
		w |= mixture.Full
	}
	r, err := e.Mixture.Eval(mixture.Query{At: c, X: x, Want: w})
	if err != nil {
		return nil, err
	}
	ev := &Eval{Score: r.Score, Denoiser: r.Denoiser, Trace: r.Trace, Fisher: r.Fisher}
	if want&WantEps != 0 {
		ev.Eps = new(mat.Dense)
		EpsFromScore(ev.Eps, c, r.Score)
	}
	return ev, nil
}

// Name implements TraceEstimator and FisherOperator.
func (Exact) Name() string { return "exact" }

// Trace implements TraceEstimator: the exact tr F (Prop. trace_matching).
func (e Exact) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	r, err := e.Mixture.Eval(mixture.Query{At: c, X: x, Want: mixture.Trace})
	if err != nil {
		return nil, err
	}
	return r.Trace, nil
}

// Apply implements FisherOperator: the exact F v.
func (e Exact) Apply(s State, v *mat.Dense) (*mat.Dense, error) {
	r, err := e.Mixture.Eval(mixture.Query{At: s.At, X: s.X, V: v, Want: mixture.MatVec})
	if err != nil {
		return nil, err
	}
	return r.MatVec, nil
}
