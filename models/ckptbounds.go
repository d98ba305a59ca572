package models

import (
	"fmt"
	"path"
	"strings"
)

// sizeParams are the hyperparameters that size a network's graph: each is
// a dimension of some variable the network stores (depth counts blocks,
// each with variables of its own), so a header whose value exceeds what
// the file holds is refused before any graph is built from it — a forged
// depth of 10 000 would otherwise build for minutes.
var sizeParams = map[string]bool{
	ParamWidth: true, ParamEmbedDim: true, ParamEmbedWidth: true, ParamNumClasses: true,
	ParamPatch: true, ParamPatchHalo: true, ParamMixtureComponents: true, ParamMixtureRank: true,
}

// checkSizes bounds the header's networks, data dimension and size
// hyperparameters by the variables it stores: networks listed once each,
// depth at most the number of variables, every other size (and Dim) at
// most the largest stored dimension. The mixture's sizes are bounded only
// where the file holds a mixture: a trace network's weights borrow the
// ε-network's (and build no more graph for it whatever K is).
func (h *CheckpointHeader) checkSizes() error {
	seen := map[string]bool{}
	for _, n := range h.Networks {
		if seen[n] {
			return fmt.Errorf("network %q listed twice", n)
		}
		seen[n] = true
	}
	maxDim, ownsMixture := 0, false
	for _, v := range h.Variables {
		for _, d := range v.Dims {
			maxDim = max(maxDim, d)
		}
		ownsMixture = ownsMixture || strings.Contains(v.Path+"/", "/"+MixtureScope+"/")
	}
	if h.Dim > maxDim {
		return fmt.Errorf("data dimension %d, but no stored variable has a dimension above %d", h.Dim, maxDim)
	}
	for p, s := range h.Params {
		name := path.Base(p)
		if name != ParamDepth && !sizeParams[name] {
			continue
		}
		v, err := decodeParam(s)
		n, isInt := v.(int)
		if err != nil || !isInt {
			continue // not a size: the network's own checks report it
		}
		mixture := name == ParamMixtureComponents || name == ParamMixtureRank
		switch {
		case n < 0:
			return fmt.Errorf("hyperparameter %s = %d, want ≥ 0", p, n)
		case name == ParamDepth && n > len(h.Variables):
			return fmt.Errorf("hyperparameter %s = %d, but the file stores only %d variables", p, n, len(h.Variables))
		case name != ParamDepth && n > maxDim && (!mixture || ownsMixture):
			return fmt.Errorf("hyperparameter %s = %d, but no stored variable has a dimension above %d", p, n, maxDim)
		}
	}
	return nil
}
