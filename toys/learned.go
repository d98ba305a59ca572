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
	"github.com/dfx-lab/dfx/models"
)

// Networks is a trained pair, the score network ε̂_θ and the DF-TM network
// t_θ of models, evaluated in float32 on a GoMLX backend through dfx/access:
// ε̂_θ and t_θ by the host wrappers of access.Net (models.NewAccessNet), the
// traces by VJPTrace (eq. nll_VJP, d VJPs), DFTM (eq. trace_appro, one
// forward pass of each network) and DFTMCentred (ours).
type Networks struct {
	Schedule schedule.Schedule
	Seed     uint64
	store    *model.Store // evaluation (EMA) weights of the networks
	net      *access.Net
	vjp      *access.VJPTrace
	dftm     *access.DFTM
	dftmc    *access.DFTMCentred // nil without a centred network
}

// newNetworks compiles the evaluators of the weights in store (both networks'
// variables, under models.ScoreScope and models.TraceScope).
func newNetworks(backend compute.Backend, s schedule.Schedule, seed uint64, store *model.Store) (*Networks, error) {
	n := &Networks{Schedule: s, Seed: seed, store: store}
	var err error
	if n.net, err = models.NewAccessNet(backend, store, s, true); err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	if n.vjp, err = access.NewVJPTrace(n.net, 0); err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	if n.dftm, err = access.NewDFTM(n.net); err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	if n.net.Nu != nil {
		if n.dftmc, err = access.NewDFTMCentred(n.net); err != nil {
			return nil, fmt.Errorf("toys: %w", err)
		}
	}
	return n, nil
}

// Eps is ε̂_θ(x, t) [B, d].
func (n *Networks) Eps(x *mat.Dense, t float64) (*mat.Dense, error) {
	eps, err := n.net.EpsAt(x, t)
	if err != nil {
		return nil, fmt.Errorf("toys: score network: %w", err)
	}
	return eps, nil
}

// EpsAndTraceVJP is ε̂_θ and the VJP trace (1/σ) Σ_i ∂ε̂_i/∂x_i (eq. nll_VJP).
func (n *Networks) EpsAndTraceVJP(x *mat.Dense, t float64) (*mat.Dense, []float64, error) {
	eps, err := n.Eps(x, t)
	if err != nil {
		return nil, nil, err
	}
	tr, err := n.vjp.Trace(x, t)
	if err != nil {
		return nil, nil, fmt.Errorf("toys: VJP trace: %w", err)
	}
	return eps, tr, nil
}

// TNet is the DF-TM network's output t_θ(x, t) ≈ E[‖x₀‖² | x_t]/d [B].
func (n *Networks) TNet(x *mat.Dense, t float64) ([]float64, error) {
	tn, err := n.net.TAt(x, t)
	if err != nil {
		return nil, fmt.Errorf("toys: DF-TM network: %w", err)
	}
	return tn, nil
}

// TraceDFTM is the DF-TM trace (eq. trace_appro) by access.DFTM.
func (n *Networks) TraceDFTM(x *mat.Dense, t float64) ([]float64, error) {
	tr, err := n.dftm.Trace(x, t)
	if err != nil {
		return nil, fmt.Errorf("toys: DF-TM trace: %w", err)
	}
	return tr, nil
}

// TraceDFTMC is the centred DF-TM trace (ours) (d/σ²)(1 − ν_θ) by
// access.DFTMCentred.
func (n *Networks) TraceDFTMC(x *mat.Dense, t float64) ([]float64, error) {
	if n.dftmc == nil {
		return nil, fmt.Errorf("toys: no centred DF-TM network")
	}
	tr, err := n.dftmc.Trace(x, t)
	if err != nil {
		return nil, fmt.Errorf("toys: centred DF-TM trace: %w", err)
	}
	return tr, nil
}

func scoreFromEps(eps *mat.Dense, sigma float64) *mat.Dense {
	var s mat.Dense
	s.Scale(-1/sigma, eps)
	return &s
}

// vjpDynamics and dftmDynamics feed the learned score and a learned trace
// to the likelihood solver.
type vjpDynamics struct{ n *Networks }

func (v vjpDynamics) Eval(x *mat.Dense, t float64) (*mat.Dense, []float64, error) {
	eps, tr, err := v.n.EpsAndTraceVJP(x, t)
	if err != nil {
		return nil, nil, err
	}
	return scoreFromEps(eps, v.n.Schedule.Sigma(t)), tr, nil
}

// dftmDynamics uses DF-TM, or the centred DF-TM (ours) when centred.
type dftmDynamics struct {
	n       *Networks
	centred bool
}

func (v dftmDynamics) Eval(x *mat.Dense, t float64) (*mat.Dense, []float64, error) {
	eps, err := v.n.Eps(x, t)
	if err != nil {
		return nil, nil, err
	}
	trace := v.n.TraceDFTM
	if v.centred {
		trace = v.n.TraceDFTMC
	}
	tr, err := trace(x, t)
	if err != nil {
		return nil, nil, err
	}
	return scoreFromEps(eps, v.n.Schedule.Sigma(t)), tr, nil
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
	eps := pfode.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, _ pfode.Want) (*pfode.Eval, error) {
		e, err := n.Eps(x, c.T)
		return &pfode.Eval{Eps: e}, err
	})
	sys := pfode.New(schedule.Continuous{Schedule: n.Schedule}, eps, m, d, 0)
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
