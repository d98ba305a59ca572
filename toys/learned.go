package toys

import (
	"context"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// Networks is a trained pair, the score network ε̂_θ and the DF-TM network
// t_θ of models, evaluated in float32 on a GoMLX backend. The traces come
// from dfx/access: VJPTrace (eq. nll_VJP, d VJPs) and DFTM (eq.
// trace_appro, one forward pass of each network). ε̂_θ and t_θ themselves
// (for the score, the PF-ODE and the t_θ diagnostic) run on local
// executables, since access exposes only traces and matvecs.
type Networks struct {
	Schedule schedule.Schedule
	Seed     uint64
	store    *model.Store // evaluation (EMA) weights of the networks
	epsExec  *model.Exec
	tnetExec *model.Exec
	vjp      *access.VJPTrace
	dftm     *access.DFTM
	dftmc    *access.DFTMCentred // nil without a centred network
}

// newNetworks compiles the evaluators of the weights in ctx (both networks'
// variables, under models.ScoreScope and models.TraceScope).
func newNetworks(backend compute.Backend, s schedule.Schedule, seed uint64, ctx *model.Store) (*Networks, error) {
	n := &Networks{Schedule: s, Seed: seed, store: ctx}
	var err error
	n.epsExec, err = model.NewExec(backend, ctx, func(ctx *model.Scope, x, a, sg *graph.Node) *graph.Node {
		return models.Eps(ctx, models.Inputs{X: x, Alpha: a, Sigma: sg})
	})
	if err != nil {
		return nil, fmt.Errorf("toys: score network: %w", err)
	}
	n.tnetExec, err = model.NewExec(backend, ctx, func(ctx *model.Scope, x, a, sg *graph.Node) *graph.Node {
		return models.TraceNet(ctx, models.Inputs{X: x, Alpha: a, Sigma: sg})
	})
	if err != nil {
		return nil, fmt.Errorf("toys: DF-TM network: %w", err)
	}
	net, err := access.FromModel(backend, ctx, s, true)
	if err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	if n.vjp, err = access.NewVJPTrace(net, 0); err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	if n.dftm, err = access.NewDFTM(net); err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	if net.Nu != nil {
		if n.dftmc, err = access.NewDFTMCentred(net); err != nil {
			return nil, fmt.Errorf("toys: %w", err)
		}
	}
	return n, nil
}

// inputs converts a float64 batch at time t to float32 tensors (x, α, σ).
func (n *Networks) inputs(x *mat.Dense, t float64) []any {
	b, d := x.Dims()
	xf := make([]float32, 0, b*d)
	for i := 0; i < b; i++ {
		for _, v := range x.RawRowView(i)[:d] {
			xf = append(xf, float32(v))
		}
	}
	a, s := make([]float32, b), make([]float32, b)
	for i := range a {
		a[i], s[i] = float32(n.Schedule.Alpha(t)), float32(n.Schedule.Sigma(t))
	}
	return []any{tensors.FromFlatDataAndDimensions(xf, b, d), tensors.FromFlatDataAndDimensions(a, b), tensors.FromFlatDataAndDimensions(s, b)}
}

func toFloat64s(t *tensors.Tensor) ([]float64, error) {
	f, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return nil, fmt.Errorf("toys: network output: %w", err)
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out, nil
}

// Eps is ε̂_θ(x, t) [B, d].
func (n *Networks) Eps(x *mat.Dense, t float64) (*mat.Dense, error) {
	out, err := n.epsExec.Exec(n.inputs(x, t)...)
	if err != nil {
		return nil, fmt.Errorf("toys: score network: %w", err)
	}
	v, err := toFloat64s(out[0])
	if err != nil {
		return nil, err
	}
	b, d := x.Dims()
	return mat.NewDense(b, d, v), nil
}

// EpsAndTraceVJP is ε̂_θ and the VJP trace (1/σ) Σ_i ∂ε̂_i/∂x_i (eq. nll_VJP).
func (n *Networks) EpsAndTraceVJP(x *mat.Dense, t float64) (*mat.Dense, []float64, error) {
	eps, err := n.Eps(x, t)
	if err != nil {
		return nil, nil, err
	}
	tr, err := n.vjp.Trace(rowsOf(x), t)
	if err != nil {
		return nil, nil, fmt.Errorf("toys: VJP trace: %w", err)
	}
	return eps, tr, nil
}

func rowsOf(x *mat.Dense) [][]float64 {
	b, d := x.Dims()
	rows := make([][]float64, b)
	for i := range rows {
		rows[i] = x.RawRowView(i)[:d]
	}
	return rows
}

// TNet is the DF-TM network's output t_θ(x, t) ≈ E[‖x₀‖² | x_t]/d [B].
func (n *Networks) TNet(x *mat.Dense, t float64) ([]float64, error) {
	if n.tnetExec == nil {
		return nil, fmt.Errorf("toys: no DF-TM network")
	}
	out, err := n.tnetExec.Exec(n.inputs(x, t)...)
	if err != nil {
		return nil, fmt.Errorf("toys: DF-TM network: %w", err)
	}
	return toFloat64s(out[0])
}

// TraceDFTM is the DF-TM trace (eq. trace_appro) by access.DFTM.
func (n *Networks) TraceDFTM(x *mat.Dense, t float64) ([]float64, error) {
	tr, err := n.dftm.Trace(rowsOf(x), t)
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
	tr, err := n.dftmc.Trace(rowsOf(x), t)
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
