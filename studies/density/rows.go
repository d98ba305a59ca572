package density

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/timing"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// runMixture fits the mixture, finds its exact levels and guides with its
// exact score and trace.
func (r *Result) runMixture(ctx context.Context, ip imageProblem, xT *mat.Dense, keep *store) error {
	cfg := r.Config
	g, err := ip.Baseline(ctx)
	if err != nil {
		return err
	}
	r.mix = g
	if r.MixtureBPD, err = ip.testBPD(g); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 5))
	grid, err := ip.sampling(cfg.MixtureTimes - 1).Times()
	if err != nil {
		return err
	}
	how := fmt.Sprintf("%d exact draws x_t = α x₀ + σ ε of q_t (the same x₀ and ε at each of %d times, so that the curves are smooth in t), "+
		"closed-form log q_t", cfg.MixtureDraws, len(grid))
	q, err := ExactLevels(g, ip.Schedule, grid, cfg.Quantiles, cfg.MixtureDraws, rng, how)
	if err != nil {
		return err
	}
	r.Levels["mixture"] = q
	tMax := grid[0]
	cT, _ := schedule.At(ip.Schedule, tMax)
	e, err := g.Eval(mixture.Query{At: cT, X: xT, Want: mixture.LogProb})
	if err != nil {
		return err
	}
	tMin, _ := ip.Schedule.Interval()
	c0, _ := schedule.At(ip.Schedule, tMin)
	measure := func(x *mat.Dense) ([]float64, []float64, error) {
		e, err := g.Eval(mixture.Query{At: c0, X: x, Want: mixture.LogProb})
		if err != nil {
			return nil, nil, err
		}
		return e.LogProb, make([]float64, len(e.LogProb)), nil // closed form: no solver error
	}
	for _, tg := range cfg.targets().list(q, true) {
		if _, err := r.rowFor(keep, "mixture", "exact", tg, ip.Dim, func() (Row, error) {
			return densityRow(ctx, ip, score.Exact{Mixture: g}, tg, xT, e.LogProb, cfg.Steps, measure)
		}); err != nil {
			return err
		}
	}
	return nil
}

// runNetworks loads the networks, finds the network's levels by the
// reference route and guides with every trace.
func (r *Result) runNetworks(ctx context.Context, ip imageProblem, xT *mat.Dense, net *access.Net, keep *store, env report.Env, log io.Writer) error {
	cfg := r.Config
	traceName := func(name string) (string, error) { return r.traceName(net, name, ip.who, log) }
	refName, err := traceName(cfg.RefTrace)
	if err != nil {
		return err
	}
	q, err := r.networkLevels(ctx, ip, net, keep, env.Work, refName, log)
	if err != nil {
		return err
	}
	r.Levels["network"] = q
	measureSpec, err := access.TraceSpec(models.SkipHutchinson.Name, cfg.MeasureProbes)
	if err != nil {
		return err
	}
	if r.Measure, err = traceName(measureSpec.Label()); err != nil {
		return err
	}
	meas, err := traceModel(ip.Problem, net, r.Measure, cfg.Seed+11)
	if err != nil {
		return err
	}
	// The measurement at MeasureRTol and at 10·MeasureRTol: their
	// difference is the stated solver error.
	measure := func(x *mat.Dense) ([]float64, []float64, error) {
		var out [2][]float64
		for i, rtol := range []float64{cfg.MeasureRTol, 10 * cfg.MeasureRTol} {
			res, err := likelihood.LogProbContext(ctx, x, meas, likelihood.Config{Schedule: ip.Schedule, RTol: rtol})
			if err != nil {
				return nil, nil, err
			}
			out[i] = res.LogProb
		}
		diff := make([]float64, len(out[0]))
		for i := range diff {
			diff[i] = math.Abs(out[0][i] - out[1][i])
		}
		return out[0], diff, nil
	}
	start := PriorStart(ip.Schedule, xT)
	for _, tr := range cfg.Traces {
		run, err := traceName(tr)
		if err != nil {
			return err
		}
		m, err := traceModel(ip.Problem, net, run, cfg.Seed+3)
		if err != nil {
			return err
		}
		for _, tg := range cfg.targets().list(q, slices.Contains(cfg.UntilTraces, tr)) {
			row, err := r.rowFor(keep, "network", tr, tg, ip.Dim, func() (Row, error) {
				return densityRow(ctx, ip, m, tg, xT, start, cfg.Steps, measure)
			})
			if err != nil {
				return fmt.Errorf("%s, %s: %w", tr, tg.name, err)
			}
			if row == nil { // read from the work folder, or another shard's
				continue
			}
			fmt.Fprintf(log, "%s: network %s %s: %.4f bpd (level %.4f, tracked %.4f)\n", ip.who, tr, tg.name, row.Achieved.Mean, row.Level, row.Tracked.Mean)
		}
	}
	return nil
}

// traceName is the name trace name runs as on net (runnableTrace); a
// fallback is said in the log and kept in r.Fallbacks.
func (r *Result) traceName(net *access.Net, name, who string, log io.Writer) (string, error) {
	run, fellBack, err := runnableTrace(net, name)
	if fellBack && !slices.Contains(r.Fallbacks, name) {
		r.Fallbacks = append(r.Fallbacks, name)
		fmt.Fprintf(log, "%s: the ε-network has no mixture skip: %s runs as %s\n", who, name, run)
	}
	return run, err
}

// networkLevels are the network's levels: kept in the work folder, or
// (a shard after the first) waited for there, or found by the reference
// route with the trace refName and kept.
func (r *Result) networkLevels(ctx context.Context, ip imageProblem, net *access.Net, keep *store, work, refName string,
	log io.Writer) (*pfode.Quantiles, error) {
	cfg := r.Config
	q, err := keep.levels()
	if err != nil {
		return nil, err
	}
	if sh := cfg.shard(); q == nil && !sh.Whole() && sh.K > 1 {
		if q, err = keep.awaitLevels(ctx, 15*time.Second, log); err != nil {
			return nil, err
		}
	}
	if q != nil {
		fmt.Fprintf(log, "%s: the network's levels read from %s\n", ip.who, work)
		return q, nil
	}
	refModel, err := traceModel(ip.Problem, net, refName, cfg.Seed+7)
	if err != nil {
		return nil, err
	}
	if q, _, err = ReferenceLevels(ctx, refModel, ip.noise(cfg.Seed+1, cfg.RefSamples), cfg.Quantiles, ip.sampling(cfg.Steps)); err != nil {
		return nil, err
	}
	q.How += " (" + refName + ")"
	return q, keep.keepLevels(q)
}

// runCosts times CostSteps unguided RK4 steps (ℓ tracked) of the batch xT
// for the exact mixture and each network trace, interleaved round by round
// after a warm-up run of each (internal/timing).
func (r *Result) runCosts(ctx context.Context, ip imageProblem, xT *mat.Dense, net *access.Net) error {
	cfg := r.Config
	type timed struct {
		model, trace string
		m            score.Model
		start        []float64
	}
	_, t1 := ip.Schedule.Interval()
	c1, err := schedule.At(ip.Schedule, t1)
	if err != nil {
		return err
	}
	e, err := r.mix.Eval(mixture.Query{At: c1, X: xT, Want: mixture.LogProb})
	if err != nil {
		return err
	}
	ms := []timed{{"mixture", "exact", score.Exact{Mixture: r.mix}, e.LogProb}}
	for _, tr := range cfg.Traces {
		run, _, err := runnableTrace(net, tr)
		if err != nil {
			return err
		}
		m, err := traceModel(ip.Problem, net, run, cfg.Seed+3)
		if err != nil {
			return err
		}
		ms = append(ms, timed{"network", tr, m, PriorStart(ip.Schedule, xT)})
	}
	cases := make([]timing.Case, len(ms))
	for i := range ms {
		cases[i] = timing.Case{Name: ms[i].model + " " + ms[i].trace, Run: func() ([]float64, error) {
			res, err := Sample(ctx, ms[i].m, nil, xT, ms[i].start, ip.sampling(cfg.CostSteps), nil)
			if err != nil {
				return nil, err
			}
			return []float64{res.Time.Seconds()}, nil
		}}
	}
	got, err := timing.Interleaved(ctx, cfg.CostRounds, cases)
	if err != nil {
		return err
	}
	for i, m := range ms {
		perStep := got[i].Median(0) / float64(cfg.CostSteps)
		r.Costs = append(r.Costs, Cost{Model: m.model, Trace: m.trace, Rounds: got[i].Rounds(),
			PerStep:   time.Duration(perStep * float64(time.Second)),
			PerSample: time.Duration(perStep * float64(cfg.Steps) / float64(cfg.Samples) * float64(time.Second))})
	}
	r.CostMachine = fmt.Sprintf("%s, %s backend", workstore.Machine(), net.Backend.Name())
	return nil
}

// densityRow guides xT with model m to tg and measures the samples.
func densityRow(ctx context.Context, ip imageProblem, m score.Model, tg target, xT *mat.Dense, start []float64, steps int,
	measure func(*mat.Dense) (logq, solverErr []float64, err error)) (Row, error) {
	sc := ip.sampling(steps)
	sc.Until = tg.until
	run, err := Sample(ctx, m, tg.target, xT, start, sc, nil)
	if err != nil {
		return Row{}, err
	}
	logq, solverErr, err := measure(run.X)
	if err != nil {
		return Row{}, err
	}
	n := len(logq)
	ach, trk, miss := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range logq {
		ach[i], trk[i] = BitsPerDim(ip.Problem, logq[i]), BitsPerDim(ip.Problem, run.Ell[i])
		miss[i] = math.Abs(ach[i] - BitsPerDim(ip.Problem, tg.level))
	}
	im := ip.Image
	row := Row{Target: tg.name, Level: BitsPerDim(ip.Problem, tg.level), LevelNats: tg.level,
		Achieved: stats.EstimateOf(ach), Tracked: stats.EstimateOf(trk), AbsMiss: stats.EstimateOf(miss),
		Ink: mean(InkMass(run.X)), Frame: mnist.FrameRMS(run.X), Detail: mean(Detail(run.X, im.H, im.W)),
		PerSample: run.Time / time.Duration(n), NFE: run.NFE, SolverErr: floats.Max(solverErr) / (float64(ip.Dim) * math.Ln2)}
	if math.IsNaN(tg.level) {
		row.Level, row.AbsMiss = math.NaN(), stats.Estimate{Mean: math.NaN(), SE: math.NaN()}
	}
	if run.Guide.Evals > 0 {
		row.Limited = float64(run.Guide.Limited) / float64(run.Guide.Evals)
	}
	clipped := mnist.Clip(run.X)
	for i := range min(n, 8) {
		row.Grid = append(row.Grid, mat.NewDense(1, ip.Dim, clipped.RawRowView(i)))
	}
	return row, nil
}

// rowFor appends the row (model, trace, target tg) to r: read from the work
// store where it holds it, else computed by run when this shard owns the
// row, and kept. The row is returned when it was computed here, nil when
// it was read or is another shard's.
func (r *Result) rowFor(keep *store, model, trace string, tg target, dim int, run func() (Row, error)) (*Row, error) {
	mine := keep.Mine()
	if row, ok, err := keep.row(model, trace, tg.name, dim); err != nil {
		return nil, err
	} else if ok {
		r.Rows = append(r.Rows, row)
		return nil, nil
	}
	if !mine {
		return nil, nil
	}
	row, err := run()
	if err != nil {
		return nil, err
	}
	row.Model, row.Trace = model, trace
	r.Rows = append(r.Rows, row)
	return &row, keep.keep(row)
}
