package models

import (
	"errors"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// AccessNetwork is the networks of a store as dfx/access's model contract,
// for unconditional queries (the null class where the networks are
// class-conditional): Eps is the score network (ScoreScope), and with
// withTrace T is the DF-TM network (TraceScope) and Nu the centred DF-TM
// network (CentredTraceScope) where the store holds one; Guided is
// classifier-free guidance (GuidedEps) where the network has classes.
func AccessNetwork(store *model.Store, withTrace bool) access.Network {
	net := access.Network{Eps: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return Eps(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
	}}
	if model.GetParamOr(store.RootScope(), ParamNumClasses, 0) > 0 {
		net.Guided = func(scope *model.Scope, x, class, scale, alpha, sigma *graph.Node) *graph.Node {
			return GuidedEps(scope, Inputs{X: x, Class: class, Alpha: alpha, Sigma: sigma}, scale)
		}
	}
	if withTrace {
		net.T = func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return TraceNet(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
		}
		if HasNetwork(store, CentredTraceScope) {
			net.Nu = func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
				return CentredTraceNet(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
			}
		}
	}
	return net
}

// TraceNetwork is the trace network (TraceScope, CentredTraceScope, or ""
// for none) that a trace spec of dfx/access's registry needs beside the
// ε-network (Spec.Needs).
func TraceNetwork(s access.Spec) string {
	switch {
	case s.Needs&access.NeedsT != 0:
		return TraceScope
	case s.Needs&access.NeedsNu != 0:
		return CentredTraceScope
	}
	return ""
}

// ResidualAccessNetwork is the residual r = ε̂ − ε_mix of a store whose
// ε-network has a mixture skip, as dfx/access's model contract (null
// class): what access.ControlVariate estimates beside the skip's exact
// trace.
func ResidualAccessNetwork(store *model.Store) (access.Network, error) {
	if model.GetParamOr(store.RootScope().At(ScoreScope), ParamSkip, SkipNone) != SkipMixture {
		return access.Network{}, errors.New("models: the ε-network has no mixture skip")
	}
	return access.Network{Eps: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		// The network's own term, not ε̂ − ε_mix: one evaluation of the skip
		// (and one VJP through it) instead of two, and no cancellation.
		_, residual := skipAndResidual(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
		return residual
	}}, nil
}

// SkipControlVariate is the Fisher trace of a store's ε-network with a
// mixture skip as the skip's exact trace plus Hutchinson with k Rademacher
// probes (seeded by seed) on the residual (access.ControlVariate): the
// estimator's variance is the residual's alone. It returns the skip too.
// The store is evaluated as given. Its probes' VJPs run through the skip
// in the graph; SkipHutchinsonTrace estimates the same number with the skip's
// part in closed form, at a fraction of the cost, and this is its
// reference.
func SkipControlVariate(backend compute.Backend, store *model.Store, s schedule.Schedule, dt dtypes.DType, k int, seed uint64) (
	access.ControlVariate, *mixture.Gaussian, error) {
	rnet, err := ResidualAccessNetwork(store)
	if err != nil {
		return access.ControlVariate{}, nil, err
	}
	mix, err := MixtureSkipOf(store)
	if err != nil {
		return access.ControlVariate{}, nil, err
	}
	h, err := access.NewHutchinson(access.NewNet(backend, store, s, dt, rnet), k, access.Rademacher, seed)
	if err != nil {
		return access.ControlVariate{}, nil, err
	}
	return access.ControlVariate{Known: score.Exact{Mixture: mix}, Residual: h}, mix, nil
}

// SkipHutchinson is the registered trace family "skip-hutchinson"
// (spec skip-hutchinson-K, or skip-hutchinson:K): SkipHutchinsonTrace with K
// probes on Env.Net, whose store must hold an ε-network with a mixture
// skip; the probes' rows a call are Env.ProbeRows.
var SkipHutchinson = access.TraceFamily{Name: "skip-hutchinson", Arg: "the number of probes", Random: true, Needs: access.NeedsNet,
	Doc: "a network with a mixture skip: the skip's exact trace plus Hutchinson with K probes on the residual",
	New: newSkipHutchinson}

// SkipExact is the registered trace family "skip-exact": the exact trace
// of a network with a mixture skip and a patch residual from its structure
// (PatchExactTrace), the same number as the d VJPs of "vjp-exact" at a
// fraction of their cost.
var SkipExact = access.TraceFamily{Name: "skip-exact", Needs: access.NeedsNet,
	Doc: "a network with a mixture skip and a patch residual: its exact trace from the structure (closed-form skip Jacobian, P² VJPs of the patch head)",
	New: func(_ int, env access.Env) (score.TraceEstimator, error) {
		t, err := PatchExactTrace(env.Net)
		if err == nil && t == nil {
			err = errors.New("models: skip-exact needs an ε-network with a mixture skip and a patch residual; this one is not (use vjp-exact)")
		}
		return t, err
	}}

func init() {
	access.RegisterTrace(SkipHutchinson)
	access.RegisterTrace(SkipExact)
}

func newSkipHutchinson(k int, env access.Env) (score.TraceEstimator, error) {
	h, err := NewSkipHutchinson(env.Net, k, env.Seed)
	if err != nil {
		return nil, err
	}
	if env.ProbeRows > 0 {
		h.SetMaxRows(env.ProbeRows)
	}
	return h, nil
}

// NewAccessNet wraps a store's networks (AccessNetwork) as an access.Net in
// the store's dtype. Use EMAStore(store) to evaluate the EMA weights. The
// variables are moved to host memory, so the backend may differ from the one
// that trained them.
func NewAccessNet(backend compute.Backend, store *model.Store, s schedule.Schedule, withTrace bool) (*access.Net, error) {
	dt, err := DTypeOf(store)
	if err != nil {
		return nil, err
	}
	if err := CheckMixtureSkip(store); err != nil {
		return nil, err
	}
	for v := range store.IterVariables() {
		if !v.HasValue() {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return nil, err
		}
		if err := val.ToLocal(); err != nil {
			return nil, fmt.Errorf("models: variable %s: %w", v.Path(), err)
		}
	}
	return access.NewNet(backend, store, s, dt, AccessNetwork(store, withTrace)), nil
}

// nullClass is the unconditional label K for every row of x (nil when the
// network has no classes).
func nullClass(scope *model.Scope, x *graph.Node) *graph.Node {
	k := model.GetParamOr(scope, ParamNumClasses, 0)
	if k == 0 {
		return nil
	}
	return graph.AddScalar(graph.Zeros(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dimensions[0])), float64(k))
}
