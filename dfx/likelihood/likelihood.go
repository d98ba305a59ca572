// Package likelihood computes log-likelihoods of a diffusion model by the
// probability-flow ODE (paper eq. nll_ode, after Chen et al. 2018 and
// Song et al. 2021) with a pluggable trace of the diffusion Fisher:
//
//	dx/dt = f(t) x − ½ g²(t) ∇log q_t(x)                  (eq. PFODE)
//	d log q_t(x_t)/dt = −f(t) d − ½ g²(t) tr F_t(x_t)       (eq. nll_ode)
//
// so that, integrating from data to noise (t from t0 = ε up to T),
//
//	log q_{t0}(x_{t0}) = log q_T(x_T) + ∫_{t0}^{T} (f d + ½ g² tr F) dt,
//
// with q_T ≈ N(0, σ_T² I) unless a prior is given. Integrating in the other
// direction, or starting at the prior and walking to the data, is the
// bug found in peers' likelihood code: the ODE must be started at the data point.
//
// The data side is a score.Model asked for its score and Fisher trace:
// score.Exact for a mixture, access.NetModel for a network with any trace
// estimator (VJP, Hutchinson, Hutch++, DF-TM), so the same solver scores
// them all. The integration
// is dfx/pfode's: its PF-ODE system carrying the log-density component, with
// a fixed-step tableau on a time grid or adaptive Dormand–Prince.
package likelihood

import (
	"context"
	"fmt"
	"math"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

// Dynamics is the name this package gave its model before dfx/score held
// the one model contract; it is score.Model itself.
//
// Deprecated: use score.Model.
type Dynamics = score.Model

// Solver is a dfx/pfode fixed-step method that carries the log-density: one
// of pfode's tableaux (Euler, Heun, RK4, or any other Tableau).
type Solver = pfode.Method

// The fixed-step solvers.
var (
	Euler Solver = pfode.Euler // order 1, 1 evaluation per step (the paper's choice)
	Heun  Solver = pfode.Heun  // order 2, 2 evaluations per step
	RK4   Solver = pfode.RK4   // order 4, 4 evaluations per step
)

// ErrInput is wrapped by every error about bad input: shapes, times,
// configurations and non-finite values. It is mixture.ErrInput, the one
// bad-input sentinel of dfx, so errors.Is matches it whichever package
// returned the error.
var ErrInput = mixture.ErrInput

// Config describes one likelihood integration.
type Config struct {
	Schedule schedule.Schedule
	// T0 is the start time (the data's time, ε for the NLL of data, or an
	// intermediate t for log q_t); zero means the schedule's TMin.
	// T1 is the end time; zero means the schedule's TMax.
	T0, T1 float64
	// Steps is the number of solver steps (≥ 1); Solver defaults to Euler.
	Steps  int
	Solver Solver
	// RTol, if positive, integrates adaptively with pfode's Dormand–Prince
	// 5(4) under RTol and ATol (zero: 1e-3·RTol) instead of Steps fixed
	// steps (Steps, Solver and Grid are then ignored).
	RTol, ATol float64
	// Grid is a schedule.TimeGrid kind. The default is "logsigma" (uniform
	// in log σ) for schedules with α ≡ 1 (VE, EDM), where the integrand is
	// smooth in log σ, and "uniform" otherwise (VP: a log-σ grid crowds the
	// steps near ε and converges far more slowly).
	Grid string
	// Prior is log q_{T1}(x) at the end point; nil means log N(x; 0, σ_{T1}² I).
	Prior func(x *mat.Dense) ([]float64, error)
	// EstimateError also integrates with Steps/2 steps (Steps ≥ 2) and reports
	// the Richardson estimate |L_N − L_{N/2}| / (2^p − 1) of the error of L_N.
	EstimateError bool
}

// Result is the outcome for a batch of B points.
type Result struct {
	LogProb  []float64  // log q_{T0}(x) [B]
	Prior    []float64  // log q_{T1}(x_{T1}) [B]
	Integral []float64  // ∫_{T0}^{T1} (f d + ½ g² tr F) dt [B]
	XT       *mat.Dense // the end point x_{T1} [B, d]
	// SolverError is the step-halving estimate of |error of LogProb| [B];
	// nil unless Config.EstimateError.
	SolverError []float64
	Evals       int         // model evaluations used (both runs)
	Stats       pfode.Stats // steps, rejections and evaluations (both runs)
}

// NLL is −LogProb, in nats per point.
func (r *Result) NLL() []float64 {
	out := make([]float64, len(r.LogProb))
	for i, v := range r.LogProb {
		out[i] = -v
	}
	return out
}

// LogProb integrates the PF-ODE and the log-density from x at cfg.T0 to
// cfg.T1 and returns log q_{T0}(x) for each row of x. The model is asked
// for its score (the velocity is eq. PFODE's score form) and its Fisher
// trace at every evaluation.
func LogProb(x *mat.Dense, m score.Model, cfg Config) (*Result, error) {
	return LogProbContext(context.Background(), x, m, cfg)
}

// LogProbContext is LogProb that stops between solver steps, with ctx's
// error, once ctx is cancelled (e.g. by SIGINT in the command line), and
// inside an evaluation where dyn is a score.ContextModel (a network's
// exact trace between its graph calls).
func LogProbContext(ctx context.Context, x *mat.Dense, dyn score.Model, cfg Config) (*Result, error) {
	cfg, err := checkConfig(x, dyn, cfg)
	if err != nil {
		return nil, err
	}
	res, err := integrate(ctx, x, dyn, cfg, cfg.Steps, 1)
	if err != nil {
		return nil, err
	}
	if cfg.EstimateError {
		half, err := integrate(ctx, x, dyn, cfg, cfg.Steps/2, 32)
		if err != nil {
			return nil, err
		}
		order := cfg.Solver.Order()
		if cfg.RTol > 0 {
			order = pfode.Dopri5.Order()
		}
		den := math.Pow(2, float64(order)) - 1
		res.SolverError = make([]float64, len(res.LogProb))
		for i := range res.SolverError {
			res.SolverError[i] = math.Abs(res.LogProb[i]-half.LogProb[i]) / den
		}
		res.Evals += half.Evals
		res.Stats.Add(half.Stats)
	}
	return res, nil
}

func checkConfig(x *mat.Dense, dyn score.Model, cfg Config) (Config, error) {
	if cfg.Schedule == nil {
		return cfg, fmt.Errorf("likelihood: no schedule: %w", ErrInput)
	}
	if dyn == nil {
		return cfg, fmt.Errorf("likelihood: no model: %w", ErrInput)
	}
	if x == nil || x.IsEmpty() {
		return cfg, fmt.Errorf("likelihood: no points: %w", ErrInput)
	}
	for _, v := range x.RawMatrix().Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return cfg, fmt.Errorf("likelihood: point value %v is not finite: %w", v, ErrInput)
		}
	}
	lo, hi := cfg.Schedule.Interval()
	if cfg.T0 == 0 {
		cfg.T0 = lo
	}
	if cfg.T1 == 0 {
		cfg.T1 = hi
	}
	if !(cfg.T0 <= cfg.T1) {
		return cfg, fmt.Errorf("likelihood: integrate from data to noise: need T0 ≤ T1, got %g > %g: %w", cfg.T0, cfg.T1, ErrInput)
	}
	for _, t := range []float64{cfg.T0, cfg.T1} {
		if err := schedule.Check(cfg.Schedule, t); err != nil {
			return cfg, fmt.Errorf("likelihood: %w: %w", err, ErrInput)
		}
	}
	if cfg.RTol < 0 || cfg.ATol < 0 || math.IsNaN(cfg.RTol) || math.IsNaN(cfg.ATol) {
		return cfg, fmt.Errorf("likelihood: tolerances must be non-negative, got rtol %g, atol %g: %w", cfg.RTol, cfg.ATol, ErrInput)
	}
	if cfg.RTol > 0 {
		if cfg.ATol == 0 {
			cfg.ATol = 1e-3 * cfg.RTol
		}
	}
	if cfg.RTol == 0 && cfg.Steps < 1 {
		return cfg, fmt.Errorf("likelihood: need at least 1 step, got %d: %w", cfg.Steps, ErrInput)
	}
	if cfg.RTol == 0 && cfg.EstimateError && cfg.Steps < 2 {
		return cfg, fmt.Errorf("likelihood: the error estimate needs at least 2 steps, got %d: %w", cfg.Steps, ErrInput)
	}
	if cfg.Solver == nil {
		cfg.Solver = Euler
	}
	if _, ok := cfg.Solver.(*pfode.Tableau); !ok {
		return cfg, fmt.Errorf("likelihood: solver %s carries no log-density (use a Runge–Kutta tableau: euler, heun, rk4): %w", cfg.Solver.Name(), ErrInput)
	}
	if cfg.Grid == "" {
		cfg.Grid = schedule.GridUniform
		if cfg.Schedule.Alpha(lo) == 1 && cfg.Schedule.Alpha(hi) == 1 {
			cfg.Grid = schedule.GridLogSigma
		}
	}
	return cfg, nil
}

// Grid returns the increasing times t0 = T0 < … < T1 of an integration.
func Grid(cfg Config, steps int) ([]float64, error) {
	if cfg.T0 == cfg.T1 {
		return []float64{cfg.T0}, nil
	}
	ts, err := schedule.TimeGrid(cfg.Schedule, cfg.Grid, cfg.T0, cfg.T1, steps)
	if err != nil {
		return nil, fmt.Errorf("likelihood: %w", err)
	}
	for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 { // TimeGrid walks noise → data
		ts[i], ts[j] = ts[j], ts[i]
	}
	return ts, nil
}

// integrate runs the PF-ODE with the log-density component from T0 to T1:
// on the grid of `steps` steps, or adaptively (cfg.RTol > 0) with the
// tolerances times tolScale (32 = 2⁵ stands for half the steps of the
// order-5 method in the step-halving error estimate).
func integrate(ctx context.Context, x0 *mat.Dense, dyn score.Model, cfg Config, steps int, tolScale float64) (*Result, error) {
	b, d := x0.Dims()
	// bound to ctx, an evaluation (e.g. d VJPs of an exact trace) stops inside too
	sys := pfode.New(schedule.Continuous{Schedule: cfg.Schedule}, score.WithContext(ctx, dyn), b, d, pfode.LogDensity)
	sys.Drive = score.WantScore
	y := sys.Init(x0, nil)
	var st pfode.Stats
	var err error
	if cfg.RTol > 0 {
		st, err = pfode.SolveAdaptive(ctx, sys, cfg.T0, cfg.T1, y,
			pfode.Adaptive{RTol: tolScale * cfg.RTol, ATol: tolScale * cfg.ATol})
	} else {
		var ts []float64
		if ts, err = Grid(cfg, steps); err != nil {
			return nil, err
		}
		if len(ts) > 1 {
			st, err = pfode.Solve(ctx, sys, cfg.Solver, ts, y, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("likelihood: %w", err)
	}
	x := sys.X(y)
	prior, err := priorLogProb(cfg, x)
	if err != nil {
		return nil, err
	}
	// Δ = log q_{T1}(x_{T1}) − log q_{T0}(x_{T0}), so the integral of
	// f d + ½ g² tr F is −Δ.
	delta := sys.LogDensity(y)
	res := &Result{Prior: prior, Integral: make([]float64, b), XT: x, Evals: st.NFE, Stats: st, LogProb: make([]float64, b)}
	for i := range res.LogProb {
		res.Integral[i] = -delta[i]
		res.LogProb[i] = prior[i] + res.Integral[i]
	}
	return res, nil
}

func priorLogProb(cfg Config, x *mat.Dense) ([]float64, error) {
	b, _ := x.Dims()
	if cfg.Prior != nil {
		p, err := cfg.Prior(x)
		if err != nil {
			return nil, fmt.Errorf("likelihood: prior: %w", err)
		}
		if len(p) != b {
			return nil, fmt.Errorf("likelihood: prior returned %d values for %d points: %w", len(p), b, ErrInput)
		}
		return p, nil
	}
	c, err := schedule.At(cfg.Schedule, cfg.T1)
	if err != nil {
		return nil, fmt.Errorf("likelihood: prior: %w", err)
	}
	return schedule.PriorLogProb(c, x), nil
}

// GaussianLogProb is log N(x; 0, s² I) for each row of x (schedule.PriorLogProb
// with σ = s).
func GaussianLogProb(x *mat.Dense, s float64) []float64 {
	return schedule.PriorLogProb(schedule.Coefficients{Sigma: s}, x)
}
