package access

import "fmt"

// TraceSet is the trace estimators a comparison runs on one network: the
// exact VJP trace tr F = (1/σ) Σ_i ∂ε̂_i/∂x_i (eq. nll_VJP), Hutchinson's
// E_z[zᵀ F z] over Rademacher probes, DF-TM (eq. trace_appro) and, where
// the network has ν_θ, the centred DF-TM.
type TraceSet struct {
	VJP        *VJPTrace
	Hutchinson *Hutchinson
	DFTM       *DFTM
	Centred    *DFTMCentred // nil when n has no ν_θ
}

// NewTraceSet builds n's TraceSet: the VJP trace takes at most maxRows rows
// a call (0: all), Hutchinson k Rademacher probes drawn from seed.
func NewTraceSet(n *Net, maxRows, k int, seed uint64) (*TraceSet, error) {
	s := &TraceSet{}
	var err error
	if s.VJP, err = NewVJPTrace(n, maxRows); err != nil {
		return nil, fmt.Errorf("access: trace set: %w", err)
	}
	if s.Hutchinson, err = NewHutchinson(n, k, Rademacher, seed); err != nil {
		return nil, fmt.Errorf("access: trace set: %w", err)
	}
	if s.DFTM, err = NewDFTM(n); err != nil {
		return nil, fmt.Errorf("access: trace set: %w", err)
	}
	if n.Nu != nil {
		if s.Centred, err = NewDFTMCentred(n); err != nil {
			return nil, fmt.Errorf("access: trace set: %w", err)
		}
	}
	return s, nil
}
