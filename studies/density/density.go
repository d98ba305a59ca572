package density

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/problem"
)

// Density guidance (dfx/pfode DensityGuide): PF-ODE samples whose
// log-density follows a target, steered and tracked with a trace
// estimator of a network, or exactly with a Gaussian mixture, on any
// problem.

// traceFamilies are the families of dfx/access's registry density guidance
// can steer a network with: DF-TM and centred DF-TM (one pass of ε_θ and
// t_θ or ν_θ), Hutchinson with K Rademacher probes, for a network with a
// mixture skip the skip's exact trace plus Hutchinson-K on the residual
// (skip-hutchinson, a control variate: the residual's variance alone), and
// the exact VJP trace (d vector-Jacobian products per point).
var traceFamilies = []string{access.DFTMFamily, access.DFTMCFamily, access.HutchinsonFamily, models.SkipHutchinson.Name, access.VJPExactFamily}

// MaxTraceK bounds a density trace's K (Hutchinson's probes).
const MaxTraceK = 1024

// Traces are traceFamilies as the study names its traces (the registry's
// labels, access.Family.LabelForm): df-tm, df-tm-c, hutchinson:K,
// skip-hutchinson:K, vjp.
func Traces() []string {
	var out []string
	for _, f := range access.TraceFamilies() {
		if slices.Contains(traceFamilies, f.Name) {
			out = append(out, f.LabelForm())
		}
	}
	return out
}

// TraceForms lists Traces for messages ("a, b or c").
func TraceForms() string {
	t := Traces()
	return strings.Join(t[:len(t)-1], ", ") + " or " + t[len(t)-1]
}

// CheckTrace reads a trace spec with dfx/access's registry (one of
// traceFamilies, K ≤ 1024) without a network; the spec's Label is the
// study's name of the trace.
func CheckTrace(name string) (access.Spec, error) {
	s, err := access.ParseTrace(name)
	if err == nil && slices.Contains(traceFamilies, s.Family) && s.K <= MaxTraceK {
		return s, nil
	}
	return access.Spec{}, fmt.Errorf("unknown trace %q (want %s, with K in 1…%d)", name, TraceForms(), MaxTraceK)
}

// TraceModel is net with the named trace estimator (the access registry's
// spec, one of Traces) as a score.Model; seed seeds Hutchinson's probes;
// exactRows bounds the rows of one call of the exact VJP trace (≤ 0:
// access.DefaultMaxRows). DF-TM and DF-TM-c run in one graph with ε_θ.
func TraceModel(net *access.Net, name string, seed uint64, exactRows int) (score.Model, error) {
	s, err := CheckTrace(name)
	if err != nil {
		return nil, fmt.Errorf("density: %w", err)
	}
	est, err := access.NewTrace(s.Name, access.Env{Net: net, Seed: seed, ExactRows: exactRows})
	if err != nil {
		return nil, fmt.Errorf("density: %w", err)
	}
	return access.NetModel{Net: net, Trace: est, Fused: true}, nil
}

// traceModel is TraceModel on an image problem's network: its exact trace
// in calls of access.PromptRows(d) rows.
func traceModel(p *problem.Problem, net *access.Net, name string, seed uint64) (score.Model, error) {
	return TraceModel(net, name, seed, access.PromptRows(p.Dim))
}

// runnableTrace is the name (the registry's label) that trace name runs as
// on net: skip-hutchinson:K needs a mixture skip, and without one falls
// back to hutchinson:K.
func runnableTrace(net *access.Net, name string) (run string, fellBack bool, err error) {
	s, err := CheckTrace(name)
	if err != nil {
		return "", false, err
	}
	if s.Family != models.SkipHutchinson.Name || models.HasNetwork(net.Store, models.MixtureScope) {
		return s.Label(), false, nil
	}
	h, err := access.TraceSpec(access.HutchinsonFamily, s.K)
	return h.Label(), err == nil, err
}

// Grids of the guided PF-ODE.
const (
	GridLogSNR  = "log-snr" // uniform in log-SNR: geometric in t near t_min, where the PF-ODE is stiff
	GridUniform = "uniform" // uniform in t from T = 1
)

// SampleConfig is how Sample integrates: RK4 with Steps steps on Grid from
// T to TMin (0: the schedule's interval), no guidance below Until. A
// σ-spaced grid such as Karras' takes its first step from t = 1 to 0.5 on
// the VP schedule, where σ hardly changes: guided samples' ℓ lost 200 nats
// there; the log-SNR grid does not.
type SampleConfig struct {
	Schedule schedule.Schedule
	Grid     string
	TMin     float64
	Steps    int
	Until    float64
}

// Times is the grid t_0 = T > … > t_Steps = TMin.
func (c SampleConfig) Times() ([]float64, error) {
	tMin, tMax := c.Schedule.Interval()
	if c.TMin > 0 {
		tMin = c.TMin
	}
	if c.Grid == GridUniform {
		return pfode.Uniform(1, tMin, c.Steps), nil
	}
	return schedule.TimeGrid(c.Schedule, schedule.GridLogSNR, tMin, tMax, c.Steps)
}

// Run is one batch of density-guided samples.
type Run struct {
	X *mat.Dense // the samples at t_min [B, d], not clipped
	// Ell is the tracked log q_{t_min}(x) [B]: the start plus the
	// integrated rate, exact when the trace is.
	Ell   []float64
	Guide pfode.DensityGuide // its statistics
	NFE   int
	Time  time.Duration
}

// Sample integrates the density-guided PF-ODE of model m from the points
// xT [B, d] at T, whose log q_T (or its estimate, the prior's) is start, to
// t_min, with target (nil: unguided, ℓ still tracked). obs, if not nil, is
// called at every grid time with the tracked ℓ and the points x_t [B, d]
// (a view of the solver's state: copy what is kept).
func Sample(ctx context.Context, m score.Model, target pfode.DensityTarget, xT *mat.Dense, start []float64, cfg SampleConfig,
	obs func(t float64, ell []float64, x *mat.Dense)) (*Run, error) {
	b, d := xT.Dims()
	if cfg.Steps < 1 || len(start) != b {
		return nil, fmt.Errorf("density: sampling needs Steps ≥ 1 and one start value per point (%d steps, %d values, %d points)", cfg.Steps, len(start), b)
	}
	// bound to ctx, an evaluation (e.g. d VJPs of an exact trace) stops inside too
	sys := pfode.New(schedule.Continuous{Schedule: cfg.Schedule}, score.WithContext(ctx, m), b, d, pfode.LogDensity)
	gd := &pfode.DensityGuide{Target: target, Start: start, Until: cfg.Until}
	sys.Guide = gd
	y := sys.Init(xT, nil)
	ellOf := func(y []float64) []float64 {
		e := append([]float64(nil), sys.LogDensity(y)...)
		floats.Add(e, start)
		return e
	}
	grid, err := cfg.Times()
	if err != nil {
		return nil, err
	}
	var o pfode.Observer
	if obs != nil {
		obs(grid[0], ellOf(y), sys.X(y))
		o = func(_ int, t float64, y []float64) error { obs(t, ellOf(y), sys.X(y)); return nil }
	}
	t0 := time.Now()
	st, err := pfode.Solve(ctx, sys, pfode.RK4, grid, y, o)
	if err != nil {
		return nil, err
	}
	return &Run{X: mat.DenseCopyOf(sys.X(y)), Ell: ellOf(y), Guide: *gd, NFE: st.NFE, Time: time.Since(t0)}, nil
}

// PriorStart is log N(x; 0, σ_T² I) of each row at the schedule's T: where
// a network's ℓ starts (the prior stands in for q_T).
func PriorStart(s schedule.Schedule, xT *mat.Dense) []float64 {
	_, tMax := s.Interval()
	c, _ := schedule.At(s, tMax)
	return schedule.PriorLogProb(c, xT)
}

// ReferenceLevels are quantiles ps of log q_t(X_t), X_t ~ q_t, on the
// sampling grid, from an unguided batch: the PF-ODE carries q_T to q_t, so
// the tracked ℓ of the batch's points at t are draws of log q_t(X_t) (with
// the model's trace, from the prior's log-density at T). That is how a
// network's levels are obtained without exact samples of q_t.
func ReferenceLevels(ctx context.Context, m score.Model, xT *mat.Dense, ps []float64, cfg SampleConfig) (*pfode.Quantiles, *Run, error) {
	var times []float64
	var ells [][]float64
	cfg.Until = 0
	run, err := Sample(ctx, m, nil, xT, PriorStart(cfg.Schedule, xT), cfg, func(t float64, ell []float64, _ *mat.Dense) {
		times, ells = append(times, t), append(ells, ell)
	})
	if err != nil {
		return nil, nil, err
	}
	how := fmt.Sprintf("an unguided batch of %d prior draws carried along the PF-ODE (RK4, %d steps), ℓ from the prior's log-density and the model's trace",
		len(run.Ell), cfg.Steps)
	q, err := pfode.QuantilesOf(times, ells, ps, how)
	return q, run, err
}

// ExactLevels are the quantiles ps of log q_t(X_t), X_t ~ q_t, of the
// Gaussian mixture g at times: draws exact draws of q_t (the same x₀ and ε
// at each time, so that the curves are smooth in t) and the closed-form
// log q_t; how says so in the report.
func ExactLevels(g *mixture.Gaussian, s schedule.Schedule, times, ps []float64, draws int, rng *rand.Rand, how string) (*pfode.Quantiles, error) {
	cs := make([]schedule.Coefficients, len(times))
	for i, t := range times {
		var err error
		if cs[i], err = schedule.At(s, t); err != nil {
			return nil, err
		}
	}
	ells, err := g.DiffusedLogProbs(rng, draws, cs)
	if err != nil {
		return nil, err
	}
	return pfode.QuantilesOf(times, ells, ps, how)
}

// Targets are the study's density targets: offsets in nats per unit time,
// quantile levels of log q_t held with Gain, and the median level again
// with guidance stopped below each of Untils. Until: no guidance below
// this t for the others.
type Targets struct {
	Offsets, Quantiles []float64
	Gain, Until        float64
	Untils             []float64
}

// target is one target of the study.
type target struct {
	name   string
	target pfode.DensityTarget
	level  float64 // log q asked at t_min (NaN: none)
	until  float64
}

// list is the targets in table order against the levels q: none, the
// offsets, the quantile levels, then (when untils) the median level (the
// quantile nearest 0.5) with each of Untils.
func (c Targets) list(q *pfode.Quantiles, untils bool) []target {
	out := []target{{name: "none", level: math.NaN()}}
	for _, o := range c.Offsets {
		out = append(out, target{fmt.Sprintf("offset %+g", o), pfode.Offset{PerUnitTime: o}, math.NaN(), c.Until})
	}
	last, mid := len(q.Times)-1, 0
	for k, p := range q.Ps {
		out = append(out, target{fmt.Sprintf("q=%g", p), q.Level(k, c.Gain), q.Values[last][k], c.Until})
		if math.Abs(p-0.5) < math.Abs(q.Ps[mid]-0.5) {
			mid = k
		}
	}
	if untils {
		for _, u := range c.Untils {
			out = append(out, target{fmt.Sprintf("q=%g, until %g", q.Ps[mid], u), q.Level(mid, c.Gain), q.Values[last][mid], u})
		}
	}
	return out
}

// ParseDensityTarget reads "offset:P" (P nats per unit time, positive
// raises log q) or "quantile:p" (p in (0, 1)).
func ParseDensityTarget(s string) (kind string, v float64, err error) {
	k, val, ok := strings.Cut(s, ":")
	if ok {
		v, err = strconv.ParseFloat(val, 64)
	}
	switch {
	case !ok || err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return "", 0, fmt.Errorf("density target %q: want offset:P or quantile:p with a finite number", s)
	case k == "offset":
		return k, v, nil
	case k == "quantile" && v > 0 && v < 1:
		return k, v, nil
	}
	return "", 0, fmt.Errorf("density target %q: want offset:P, or quantile:p with p in (0, 1)", s)
}
