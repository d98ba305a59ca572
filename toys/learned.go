package toys

import (
	"context"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/models"
)

// Names of the learned trace methods.
const (
	MethodVJP   = "vjp"     // tr F = (1/σ) Σ_i ∂ε̂_i/∂x_i, eq. nll_VJP
	MethodDFTM  = "df-tm"   // tr F = d/σ² − α²/σ⁴ (d t_θ − ‖ȳ_θ‖²), eq. trace_appro
	MethodDFTMC = "df-tm-c" // ours, centred: tr F = (d/σ²)(1 − ν_θ), ν_θ ≈ ‖ε̂_θ − ε‖²/d
)

// Networks is a trained pair, the score network ε̂_θ and the DF-TM network
// t_θ of models, evaluated in float32 on a GoMLX backend through dfx/access
// at schedule.Coefficients, like every model: the network as a score.Model
// (Model), its traces as score.TraceEstimators (Trace) — VJPTrace (eq.
// nll_VJP, d VJPs), DFTM (eq. trace_appro, one forward pass of each
// network) and DFTMCentred (ours).
type Networks struct {
	Schedule schedule.Schedule
	Seed     uint64
	store    *model.Store // evaluation (EMA) weights of the networks
	net      *access.Net
	traces   map[string]score.TraceEstimator // by method, built from the access registry
}

// newNetworks compiles the evaluators of the weights in store (both networks'
// variables, under models.ScoreScope and models.TraceScope).
func newNetworks(backend compute.Backend, s schedule.Schedule, seed uint64, store *model.Store) (*Networks, error) {
	n := &Networks{Schedule: s, Seed: seed, store: store}
	var err error
	if n.net, err = models.NewAccessNet(backend, store, s, true); err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	n.traces = map[string]score.TraceEstimator{}
	methods := []string{MethodVJP, MethodDFTM}
	if n.net.Nu != nil {
		methods = append(methods, MethodDFTMC)
	}
	for _, m := range methods {
		if n.traces[m], err = access.NewTrace(m, access.Env{Net: n.net}); err != nil {
			return nil, fmt.Errorf("toys: %w", err)
		}
	}
	return n, nil
}

// Trace is the trace estimator of a learned method: MethodVJP (d VJPs,
// access.VJPTrace), MethodDFTM (access.DFTM) or MethodDFTMC (ours,
// access.DFTMCentred).
func (n *Networks) Trace(method string) (score.TraceEstimator, error) {
	if est, ok := n.traces[method]; ok {
		return est, nil
	}
	if method == MethodDFTMC {
		return nil, fmt.Errorf("toys: no centred DF-TM network")
	}
	return nil, fmt.Errorf("toys: no learned trace %q", method)
}

// Net is the networks in dfx/access's contract.
func (n *Networks) Net() *access.Net { return n.net }

// Traces are the learned methods' traces at (c, x), one estimator after the
// other in the order given.
func (n *Networks) Traces(c schedule.Coefficients, x *mat.Dense, methods ...string) (map[string][]float64, error) {
	out := map[string][]float64{}
	for _, m := range methods {
		est, err := n.Trace(m)
		if err != nil {
			return nil, err
		}
		if out[m], err = est.Trace(c, x); err != nil {
			return nil, fmt.Errorf("toys: %s trace: %w", m, err)
		}
	}
	return out, nil
}

// Model is the score network with the trace of a method (MethodVJP,
// MethodDFTM, MethodDFTMC) as a score.Model, for the likelihood ODE.
func (n *Networks) Model(method string) (score.Model, error) {
	tr, err := n.Trace(method)
	if err != nil {
		return nil, err
	}
	return access.NetModel{Net: n.net, Trace: tr}, nil
}

// Sample draws m points by Heun steps of the PF-ODE with the learned score
// from x_T ~ N(0, σ_T² I) (schedule.SamplePrior) down to the schedule's
// TMin, on a grid uniform in log σ; the last step is Euler, as is usual at
// the smallest σ. The integrator is dfx/pfode's; the velocity is
// f x + ½ g² ε̂/σ (pfode.VelocityFromEps).
func (n *Networks) Sample(m, steps int, seed uint64) (*mat.Dense, error) {
	lo, hi := n.Schedule.Interval()
	ts, err := schedule.TimeGrid(n.Schedule, schedule.GridLogSigma, lo, hi, steps)
	if err != nil {
		return nil, err
	}
	const d = 2
	x0 := schedule.SamplePrior(schedule.Prior(n.Schedule), m, d, NewRNG(seed))
	sys := pfode.New(schedule.Continuous{Schedule: n.Schedule}, access.NetModel{Net: n.net}, m, d, 0)
	sys.Drive = score.WantEps
	y := sys.Init(x0, nil)
	ctx := context.Background()
	last := len(ts) - 2
	if last > 0 {
		if _, err := pfode.Solve(ctx, sys, pfode.Heun, ts[:last+1], y, nil); err != nil {
			return nil, fmt.Errorf("toys: sampling: %w", err)
		}
	}
	if _, err := pfode.Solve(ctx, sys, pfode.Euler, ts[last:], y, nil); err != nil {
		return nil, fmt.Errorf("toys: sampling: %w", err)
	}
	return sys.X(y), nil
}
