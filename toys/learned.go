package toys

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
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
// from x_T ~ N(0, σ_T² I) down to the schedule's TMin.
func (n *Networks) Sample(m, steps int, seed uint64) (*mat.Dense, error) {
	lo, hi := n.Schedule.Interval()
	ts, err := schedule.TimeGrid(n.Schedule, schedule.GridLogSigma, lo, hi, steps)
	if err != nil {
		return nil, err
	}
	rng := NewRNG(seed)
	x := mat.NewDense(m, 2, nil)
	sT := n.Schedule.Sigma(hi)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = sT * rng.NormFloat64()
	}
	vel := func(x *mat.Dense, t float64) (*mat.Dense, error) {
		eps, err := n.Eps(x, t)
		if err != nil {
			return nil, err
		}
		c, err := schedule.At(n.Schedule, t)
		if err != nil {
			return nil, err
		}
		// f x − ½ g² ∇log q = f x + ½ g² ε̂/σ
		var v mat.Dense
		v.Scale(0.5*c.G2/c.Sigma, eps)
		v.Add(&v, scaled(c.F, x))
		return &v, nil
	}
	for k := 0; k+1 < len(ts); k++ {
		h := ts[k+1] - ts[k]
		k1, err := vel(x, ts[k])
		if err != nil {
			return nil, err
		}
		var pred mat.Dense
		pred.Add(x, scaled(h, k1))
		if k+2 == len(ts) { // last step: Euler, as is usual at the smallest σ
			x = &pred
			break
		}
		k2, err := vel(&pred, ts[k+1])
		if err != nil {
			return nil, err
		}
		var sum mat.Dense
		sum.Add(k1, k2)
		x.Add(x, scaled(h/2, &sum))
	}
	return x, nil
}

func scaled(a float64, m *mat.Dense) *mat.Dense {
	var s mat.Dense
	s.Scale(a, m)
	return &s
}
