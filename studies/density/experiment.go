package mnist

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// DensityExpConfig configures the MNIST density-guidance experiment
// (`dfx reproduce mnist-density`, issue 24 item 3): unconditional samples
// guided to quantile levels and by offsets of their log-density,
//   - on an image-scale model whose log q_t and Fisher trace are exact at
//     every t: a Gaussian mixture fitted to the training images (Mixture
//     options), guided with its exact trace and scored in closed form;
//   - on the networks of Dir (the committed set when empty), steered and
//     tracked with each trace of Traces, the achieved log-density measured
//     independently by dopri5 (MeasureRTol) with MeasureProbes Hutchinson
//     probes: on the residual beside the skip's exact trace where the
//     network has a mixture skip (skip-hutchinson), on the whole network
//     otherwise. A trace named skip-hutchinson:K falls back to
//     hutchinson:K, said in the log and the report, on a network without
//     a skip.
type DensityExpConfig struct {
	Profile string
	Dir     string `json:"-"`
	// Work is the folder that keeps the finished rows and the network's
	// levels (density-<profile>.json, saved after each row; one run at a
	// time per file, a second is refused): a run resumes there, and reads
	// rows computed elsewhere with the same settings and networks ("":
	// nothing kept).
	Work string `json:"-"`
	// Shard k of Shards (1 ≤ k ≤ Shards): the run computes only the rows
	// whose position in table order is k−1 modulo Shards and keeps them in
	// its own file of Work (density-<profile>.shard-k-of-n.json), so that
	// shards can run side by side on one folder; shards after the first
	// wait for the first's network levels. Its result is partial (the rows
	// in the folder when it ends; Report renders them alone, without
	// figures or cost table); a run without shards then reads every file
	// and is the whole experiment. Shards 0: every row.
	Shard, Shards int `json:"-"`
	Mixture       mixture.FitOptions
	// Samples per target, from the same noises; RK4 with Steps steps.
	Samples, Steps int
	// Offsets in nats per unit time; Quantiles of log q_t under q_t held
	// with Gain; Untils repeat the median level with guidance stopped
	// below each time, for each of UntilTraces.
	Offsets, Quantiles []float64
	Gain               float64
	Untils             []float64
	Traces             []string
	UntilTraces        []string
	GridTraces         []string // network traces drawn as sample grids
	// RefSamples unguided network samples give the network's levels
	// (ReferenceLevels, with RefTrace); MixtureDraws exact draws of q_t
	// at each of MixtureTimes times give the mixture's.
	RefSamples, MixtureDraws, MixtureTimes int
	RefTrace                               string
	MeasureRTol                            float64
	MeasureProbes                          int
	// CostSteps RK4 steps of a batch of Samples, unguided (ℓ tracked),
	// timed for the exact mixture and each network trace in CostRounds
	// interleaved rounds after a warm-up: the cost table, measured apart
	// from the rows, which may run on another machine or under load.
	CostSteps, CostRounds int
	Seed                  uint64
}

// DensityExpFull and DensityExpQuick are the two profiles. The full
// profile levels and measures with skip-hutchinson:4, the skip mixture's
// exact trace plus 4 Rademacher probes on the residual (the probes are
// drawn once per sample and kept along its solve, as in FFJORD): on a CPU,
// the exact trace (784 VJPs an evaluation) is out of reach, and
// Hutchinson-16 costs about three times as much. Its one-probe variance is
// below Hutchinson's on the whole network at every time tested, and its
// variance with 4 probes is 25× below Hutchinson-16's at t = 0.3, but 2.4×
// above it at t = 0.05 and 0.8
// (TestSkipHutchinsonVariance), so its integrated probe noise per sample
// is stated beside the results (README), not assumed small.
func DensityExpFull(dir string) DensityExpConfig {
	return DensityExpConfig{Profile: "full", Dir: dir, Mixture: *SkipOptions(), Samples: 16, Steps: 100,
		Offsets: []float64{-300, -100, 100, 300}, Quantiles: []float64{0.05, 0.5, 0.95}, Gain: 10,
		Untils: []float64{0.02, 0.05, 0.1, 0.2}, Traces: []string{"df-tm", "df-tm-c", "hutchinson:4", "hutchinson:16", "skip-hutchinson:4"}, UntilTraces: []string{"df-tm", "df-tm-c"},
		GridTraces: []string{"df-tm-c", "skip-hutchinson:4"}, RefSamples: 64, RefTrace: "skip-hutchinson:4", MixtureDraws: 1000, MixtureTimes: 41, MeasureRTol: 1e-3, MeasureProbes: 4,
		CostSteps: 10, CostRounds: 5, Seed: 1}
}

func DensityExpQuick(dir string) DensityExpConfig {
	return DensityExpConfig{Profile: "quick", Dir: dir, Mixture: mixture.FitOptions{Components: 2, PerClass: true, Rank: 2, Shrink: 0.2, Idle: 1e-4, Iters: 2, Seed: 1},
		Samples: 2, Steps: 64, Offsets: []float64{300}, Quantiles: []float64{0.5}, Gain: 10,
		Untils: []float64{0.2}, Traces: []string{"df-tm", "df-tm-c"}, UntilTraces: []string{"df-tm"},
		GridTraces: []string{"df-tm-c"}, RefSamples: 4, RefTrace: "hutchinson:1", MixtureDraws: 20, MixtureTimes: 5, MeasureRTol: 1e-2, MeasureProbes: 1,
		CostSteps: 2, CostRounds: 1, Seed: 1}
}

// DensityExpRow is one model, trace and target.
type DensityExpRow struct {
	Model, Trace, Target string
	// Level is the asked log q at t_min in bits per dimension (NaN: no
	// level); Achieved the measured bpd of the samples (exact for the
	// mixture, dopri5 for a network), Tracked what the guide's ℓ said.
	Level, LevelNats           float64
	Achieved, Tracked, AbsMiss stats.Estimate
	Ink, Frame, Detail         float64 // means over the samples
	Limited                    float64
	SolverErr                  float64 // the measurement's largest solver error, bpd (0: closed form)
	PerSample                  time.Duration
	NFE                        int
	// Grid is the samples (clipped), for the figure.
	Grid []*mat.Dense
}

// DensityCost is the cost of density-guided sampling with one trace: the
// median over interleaved rounds of CostSteps RK4 steps of a batch.
type DensityCost struct {
	Model, Trace string
	PerStep      time.Duration // one RK4 step (4 evaluations with the trace) of the batch
	PerSample    time.Duration // PerStep × Steps / Samples: one sample's guided path
	Rounds       int
}

// DensityExpResult is the result of RunDensityExp.
type DensityExpResult struct {
	Config       DensityExpConfig
	Rows         []DensityExpRow
	MixtureBPD   float64 // the mixture's exact test bpd (1 000 images)
	NetworkAbout string
	Machine      string                      // where the rows were computed (several when resumed elsewhere)
	Measure      string                      // the measurement's trace (skip-hutchinson:K or hutchinson:K)
	Fallbacks    []string                    // skip-hutchinson traces run as hutchinson (no skip)
	Levels       map[string]*pfode.Quantiles // "mixture", "network"
	Costs        []DensityCost
	// Shard is "k/n" for a shard's partial result ("": the whole run).
	Shard       string
	CostMachine string            // where and on which backend the cost table was measured
	mix         *mixture.Gaussian // the fitted mixture (for the cost table)
	// Elapsed is the computing time of every run on the work folder and
	// this one; RowTime the part that made rows (and levels): the earlier
	// runs' and, if this run computed any, this run's up to its cost
	// table; CostTime the cost table's.
	Elapsed, RowTime, CostTime time.Duration
}

// BitsPerDim converts a log-density at t_min (nats) to bits per dimension
// (the MNIST quantisation: −log q/(784 ln 2) + 7).
func BitsPerDim(logq float64) float64 {
	v, _ := likelihood.BitsPerDim([]float64{logq}, Dim, &Quant)
	return v[0]
}

// RunDensityExp runs the experiment.
func RunDensityExp(ctx context.Context, cfg DensityExpConfig, log io.Writer) (*DensityExpResult, error) {
	start := time.Now()
	if cfg.Samples < 2 || cfg.Steps < 1 || cfg.RefSamples < 2 || cfg.MixtureDraws < 2 || cfg.MixtureTimes < 2 || cfg.CostSteps < 1 || cfg.CostRounds < 1 {
		return nil, fmt.Errorf("mnist: density experiment needs Samples, RefSamples, MixtureDraws, MixtureTimes ≥ 2 and Steps, CostSteps, CostRounds ≥ 1: %+v", cfg)
	}
	if cfg.Shards < 0 || (cfg.Shards > 0 && (cfg.Shard < 1 || cfg.Shard > cfg.Shards)) {
		return nil, fmt.Errorf("mnist: density experiment shard %d of %d: want 1 ≤ shard ≤ shards", cfg.Shard, cfg.Shards)
	}
	if cfg.Shards > 0 && cfg.Work == "" {
		return nil, fmt.Errorf("mnist: a shard of the density experiment needs a work folder to keep its rows in: %w", ErrWork)
	}
	res := &DensityExpResult{Config: cfg, Levels: map[string]*pfode.Quantiles{}}
	if cfg.Shards > 0 {
		res.Shard = fmt.Sprintf("%d/%d", cfg.Shard, cfg.Shards)
	}
	nets, err := OpenNetworks(cfg.Dir)
	if err != nil {
		return nil, err
	}
	digest, err := networksDigest(nets)
	if err != nil {
		return nil, err
	}
	own := densityWorkFile(cfg.Profile)
	if cfg.Shards > 0 {
		own = DensityShardFile(cfg.Profile, cfg.Shard, cfg.Shards)
	}
	lock, err := lockWork("mnist-density", cfg.Work, own, filepath.Join(cfg.Work, own), log)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	keep, err := openDensityWork(cfg.Work, cfg, digest, nets.Backend.Name())
	if err != nil {
		return nil, err
	}
	if n := len(keep.rows); n > 0 {
		fmt.Fprintf(log, "mnist-density: %d rows read from %s (%s; %.0f s)\n", n, cfg.Work, keep.where(), keep.readSeconds())
	}
	step := stepLogger(ctx, log, "mnist-density")
	xT := InitialNoise(cfg.Seed, 0, cfg.Samples)
	if err := step("exact mixture", func() error { return res.runMixture(ctx, xT, keep) }); err != nil {
		return nil, err
	}
	if err := step("networks", func() error { return res.runNetworks(ctx, xT, nets, keep, log) }); err != nil {
		return nil, err
	}
	res.RowTime = time.Since(start)
	if cfg.Work != "" {
		res.RowTime = keep.rowTime()
	}
	costStart := time.Now()
	if res.Shard != "" {
		fmt.Fprintf(log, "mnist-density: shard %s done; %d of its profile's rows are in %s (run without a shard to write the whole report)\n", res.Shard, len(keep.rows), cfg.Work)
	} else if err := step("cost per guided path", func() error { return res.runCosts(ctx, xT, nets) }); err != nil {
		return nil, err
	} else {
		res.CostTime = time.Since(costStart)
	}
	res.Elapsed = time.Since(start)
	res.Machine = fmt.Sprintf("%s, %s backend", Machine(), nets.Backend.Name())
	if w := keep.where(); cfg.Work != "" && w != "" {
		res.Elapsed, res.Machine = keep.elapsed(), w
	}
	return res, nil
}

// densityTargets are the targets in table order against the levels q:
// none, offsets, quantiles, then the median level with each Until (when
// untils).
type densityTarget struct {
	name   string
	target pfode.DensityTarget
	level  float64
	until  float64
}

func (cfg DensityExpConfig) targets(q *pfode.Quantiles, untils bool) []densityTarget {
	out := []densityTarget{{name: "none", level: math.NaN()}}
	for _, o := range cfg.Offsets {
		out = append(out, densityTarget{fmt.Sprintf("offset %+g", o), pfode.Offset{PerUnitTime: o}, math.NaN(), 0})
	}
	last, mid := len(q.Times)-1, 0
	for k, p := range q.Ps {
		out = append(out, densityTarget{fmt.Sprintf("q=%g", p), q.Level(k, cfg.Gain), q.Values[last][k], 0})
		if math.Abs(p-0.5) < math.Abs(q.Ps[mid]-0.5) {
			mid = k
		}
	}
	if untils {
		for _, u := range cfg.Untils {
			out = append(out, densityTarget{fmt.Sprintf("q=%g, until %g", q.Ps[mid], u), q.Level(mid, cfg.Gain), q.Values[last][mid], u})
		}
	}
	return out
}

// runMixture fits the mixture, finds its exact levels and guides with its
// exact score and trace.
func (r *DensityExpResult) runMixture(ctx context.Context, xT *mat.Dense, keep *densityKeeper) error {
	cfg := r.Config
	g, err := FitMixtureContext(ctx, cfg.Mixture)
	if err != nil {
		return err
	}
	r.mix = g
	if r.MixtureBPD, _, err = MixtureBPD(g, 1000); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 5))
	grid, err := densityGrid(cfg.MixtureTimes - 1)
	if err != nil {
		return err
	}
	cs := make([]schedule.Coefficients, len(grid))
	for i, t := range grid {
		if cs[i], err = schedule.At(Schedule(), t); err != nil {
			return err
		}
	}
	ells, err := g.DiffusedLogProbs(rng, cfg.MixtureDraws, cs)
	if err != nil {
		return err
	}
	q, err := pfode.QuantilesOf(grid, ells, cfg.Quantiles, fmt.Sprintf("%d exact draws x_t = α x₀ + σ ε of q_t (the same x₀ and ε at each of %d times, so that the curves are smooth in t), closed-form log q_t", cfg.MixtureDraws, len(grid)))
	if err != nil {
		return err
	}
	r.Levels["mixture"] = q
	tMax := grid[0]
	cT, _ := schedule.At(Schedule(), tMax)
	e, err := g.Eval(mixture.Query{At: cT, X: xT, Want: mixture.LogProb})
	if err != nil {
		return err
	}
	tMin, _ := Schedule().Interval()
	c0, _ := schedule.At(Schedule(), tMin)
	measure := func(x *mat.Dense) ([]float64, []float64, error) {
		e, err := g.Eval(mixture.Query{At: c0, X: x, Want: mixture.LogProb})
		if err != nil {
			return nil, nil, err
		}
		return e.LogProb, make([]float64, len(e.LogProb)), nil // closed form: no solver error
	}
	for _, tg := range cfg.targets(q, true) {
		mine := keep.mine()
		if row, ok := keep.row("mixture", "exact", tg.name); ok {
			r.Rows = append(r.Rows, row)
			continue
		}
		if !mine {
			continue
		}
		row, err := densityRow(ctx, score.Exact{Mixture: g}, tg, xT, e.LogProb, cfg.Steps, measure)
		if err != nil {
			return err
		}
		row.Model, row.Trace = "mixture", "exact"
		r.Rows = append(r.Rows, row)
		if err := keep.keep(row); err != nil {
			return err
		}
	}
	return nil
}

// runNetworks loads the networks, finds the network's levels by the
// reference route and guides with every trace.
func (r *DensityExpResult) runNetworks(ctx context.Context, xT *mat.Dense, nets *Networks, keep *densityKeeper, log io.Writer) error {
	cfg := r.Config
	if rec := nets.Records["eps"]; rec != nil {
		r.NetworkAbout = fmt.Sprintf("ε-network %s: %d steps on %s", rec.Net, rec.Steps, rec.Machine)
	}
	traceName := func(name string) string {
		run := nets.runnableTrace(name)
		if run != name && !slices.Contains(r.Fallbacks, name) {
			r.Fallbacks = append(r.Fallbacks, name)
			fmt.Fprintf(log, "mnist-density: the ε-network has no mixture skip: %s runs as %s\n", name, run)
		}
		return run
	}
	refName := traceName(cfg.RefTrace)
	q, err := keep.levels("network")
	if err != nil {
		return err
	}
	if q == nil && cfg.Shards > 0 && cfg.Shard > 1 {
		if q, err = keep.awaitLevels(ctx, "network", 15*time.Second, log); err != nil {
			return err
		}
	}
	if q != nil {
		fmt.Fprintf(log, "mnist-density: the network's levels read from %s\n", cfg.Work)
	} else {
		refModel, err := nets.TraceModel(refName, cfg.Seed+7)
		if err != nil {
			return err
		}
		if q, _, err = ReferenceLevels(ctx, refModel, InitialNoise(cfg.Seed+1, 0, cfg.RefSamples), cfg.Quantiles, DensityConfig{Steps: cfg.Steps}); err != nil {
			return err
		}
		q.How += " (" + refName + ")"
		if err := keep.keepLevels("network", q); err != nil {
			return err
		}
	}
	r.Levels["network"] = q
	r.Measure = traceName(fmt.Sprintf("skip-hutchinson:%d", cfg.MeasureProbes))
	meas, err := nets.TraceModel(r.Measure, cfg.Seed+11)
	if err != nil {
		return err
	}
	// The measurement at MeasureRTol and at 10·MeasureRTol: their
	// difference is the stated solver error.
	measure := func(x *mat.Dense) ([]float64, []float64, error) {
		var out [2][]float64
		for i, rtol := range []float64{cfg.MeasureRTol, 10 * cfg.MeasureRTol} {
			res, err := likelihood.LogProbContext(ctx, x, meas, likelihood.Config{Schedule: Schedule(), RTol: rtol})
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
	start := PriorStart(xT)
	for _, tr := range cfg.Traces {
		m, err := nets.TraceModel(traceName(tr), cfg.Seed+3)
		if err != nil {
			return err
		}
		withUntil := false
		for _, u := range cfg.UntilTraces {
			withUntil = withUntil || u == tr
		}
		for _, tg := range cfg.targets(q, withUntil) {
			mine := keep.mine()
			if row, ok := keep.row("network", tr, tg.name); ok {
				r.Rows = append(r.Rows, row)
				continue
			}
			if !mine {
				continue
			}
			row, err := densityRow(ctx, m, tg, xT, start, cfg.Steps, measure)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", tr, tg.name, err)
			}
			row.Model, row.Trace = "network", tr
			r.Rows = append(r.Rows, row)
			if err := keep.keep(row); err != nil {
				return err
			}
			fmt.Fprintf(log, "mnist-density: network %s %s: %.4f bpd (level %.4f, tracked %.4f)\n", tr, tg.name, row.Achieved.Mean, row.Level, row.Tracked.Mean)
		}
	}
	return nil
}

// runCosts times CostSteps unguided RK4 steps (ℓ tracked) of the batch xT
// for the exact mixture and each network trace, interleaved round by round
// after a warm-up run of each.
func (r *DensityExpResult) runCosts(ctx context.Context, xT *mat.Dense, nets *Networks) error {
	cfg := r.Config
	type timed struct {
		model, trace string
		m            score.Model
		start        []float64
	}
	_, t1 := Schedule().Interval()
	c1, err := schedule.At(Schedule(), t1)
	if err != nil {
		return err
	}
	e, err := r.mix.Eval(mixture.Query{At: c1, X: xT, Want: mixture.LogProb})
	if err != nil {
		return err
	}
	ms := []timed{{"mixture", "exact", score.Exact{Mixture: r.mix}, e.LogProb}}
	for _, tr := range cfg.Traces {
		m, err := nets.TraceModel(nets.runnableTrace(tr), cfg.Seed+3)
		if err != nil {
			return err
		}
		ms = append(ms, timed{"network", tr, m, PriorStart(xT)})
	}
	times := make([][]float64, len(ms))
	run := func(i int) (time.Duration, error) {
		res, err := DensitySample(ctx, ms[i].m, nil, xT, ms[i].start, DensityConfig{Steps: cfg.CostSteps}, nil)
		if err != nil {
			return 0, err
		}
		return res.Time, nil
	}
	for i := range ms { // warm-up: compile
		if _, err := run(i); err != nil {
			return fmt.Errorf("%s %s: %w", ms[i].model, ms[i].trace, err)
		}
	}
	for range cfg.CostRounds {
		for i := range ms {
			d, err := run(i)
			if err != nil {
				return err
			}
			times[i] = append(times[i], d.Seconds())
		}
	}
	for i, m := range ms {
		perStep := median(times[i]) / float64(cfg.CostSteps)
		r.Costs = append(r.Costs, DensityCost{Model: m.model, Trace: m.trace, Rounds: len(times[i]),
			PerStep:   time.Duration(perStep * float64(time.Second)),
			PerSample: time.Duration(perStep * float64(cfg.Steps) / float64(cfg.Samples) * float64(time.Second))})
	}
	r.CostMachine = fmt.Sprintf("%s, %s backend", Machine(), nets.Backend.Name())
	return nil
}

// runnableTrace is the trace name runs as on these networks:
// skip-hutchinson:K needs a mixture skip, and without one is hutchinson:K.
func (n *Networks) runnableTrace(name string) string {
	if rest, ok := strings.CutPrefix(name, "skip-"); ok && !models.HasNetwork(n.Store, models.MixtureScope) {
		return rest
	}
	return name
}

// densityRow guides xT with model m to tg and measures the samples.
func densityRow(ctx context.Context, m score.Model, tg densityTarget, xT *mat.Dense, start []float64, steps int, measure func(*mat.Dense) (logq, solverErr []float64, err error)) (DensityExpRow, error) {
	run, err := DensitySample(ctx, m, tg.target, xT, start, DensityConfig{Steps: steps, Until: tg.until}, nil)
	if err != nil {
		return DensityExpRow{}, err
	}
	logq, solverErr, err := measure(run.X)
	if err != nil {
		return DensityExpRow{}, err
	}
	n := len(logq)
	ach, trk, miss := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range logq {
		ach[i], trk[i] = BitsPerDim(logq[i]), BitsPerDim(run.Ell[i])
		miss[i] = math.Abs(ach[i] - BitsPerDim(tg.level))
	}
	row := DensityExpRow{Target: tg.name, Level: BitsPerDim(tg.level), LevelNats: tg.level,
		Achieved: stats.EstimateOf(ach), Tracked: stats.EstimateOf(trk), AbsMiss: stats.EstimateOf(miss),
		Ink: mean(InkMass(run.X)), Frame: FrameRMS(run.X), Detail: mean(Detail(run.X)),
		PerSample: run.Time / time.Duration(n), NFE: run.NFE, SolverErr: floats.Max(solverErr) / (Dim * math.Ln2)}
	if math.IsNaN(tg.level) {
		row.Level, row.AbsMiss = math.NaN(), stats.Estimate{Mean: math.NaN(), SE: math.NaN()}
	}
	if run.Guide.Evals > 0 {
		row.Limited = float64(run.Guide.Limited) / float64(run.Guide.Evals)
	}
	clipped := Clip(run.X)
	for i := range min(n, 8) {
		row.Grid = append(row.Grid, mat.NewDense(1, Dim, clipped.RawRowView(i)))
	}
	return row, nil
}

func mean(v []float64) float64 {
	m, _ := stats.MeanSE(v)
	return m
}
