package access

import "errors"

// DFTMCentred is centred DF trace matching, our variant of DF-TM (beyond the
// paper). The scalar network ν_θ(x_t, t) is regressed on the per-sample DSM
// error of the frozen score network, ‖ε̂_θ − ε‖²/d = (α²/σ²)‖x₀ − ȳ_θ‖²/d
// (the DFTMCentred objective of the models package); its optimum is (α²/σ²)(tr Cov[x₀|x_t] + ‖ȳ − ȳ_θ‖²)/d,
// and since tr F = d/σ² − (α²/σ⁴) tr Cov[x₀|x_t] (Prop.
// trace_matching),
//
//	tr F ≈ (d/σ²)(1 − ν_θ),
//
// one forward pass of ν_θ alone. The paper's DF-TM gets the posterior
// variance as d·t_θ − ‖ȳ_θ‖², a small difference of two large numbers
// multiplied by α²/σ⁴; here ν_θ is that variance already scaled to O(1), so
// a 1% error in ν_θ is at most a 1% error in the trace's deficit from d/σ².
// Its bias is one-signed: ν_θ* ≥ ν, so the trace is underestimated by
// (α²/σ⁴)‖ȳ − ȳ_θ‖², the score network's own error.
type DFTMCentred struct{ scalarTrace }

// NewDFTMCentred compiles the estimator; the Net must have a ν network.
func NewDFTMCentred(n *Net) (*DFTMCentred, error) {
	if n.Nu == nil {
		return nil, errors.New("access: centred DF-TM needs a centred trace network (Net.Nu)")
	}
	st, err := newScalarTrace(n, "df-tm-c", DFTMCentredTraceGraph, dftmCentredFromEps)
	return &DFTMCentred{st}, err
}
