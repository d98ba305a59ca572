package density

import (
	"context"
	"fmt"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/progress"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/problem"
)

// Config configures density guidance on an image problem (`dfx reproduce
// mnist-density`): unconditional samples guided to quantile levels and by
// offsets of their log-density,
//   - on an image-scale model whose log q_t and Fisher trace are exact at
//     every t: the problem's Baseline, a Gaussian mixture fitted to the
//     training images (Mixture options), guided with its exact trace and
//     scored in closed form;
//   - on the problem's networks (Env.Nets, the committed set when empty),
//     steered and tracked with each trace of Traces, the achieved
//     log-density measured independently by dopri5 (MeasureRTol) with
//     MeasureProbes Hutchinson probes: on the residual beside the skip's
//     exact trace where the network has a mixture skip (skip-hutchinson),
//     on the whole network otherwise. A trace named skip-hutchinson:K
//     falls back to hutchinson:K, said in the log and the report, on a
//     network without a skip.
//
// The finished rows and the network's levels are kept in Env.Work
// (density-<profile>.json, internal/workstore).
type Config struct {
	Profile report.Profile
	// Shard "k/n" computes only the rows whose position in table order is
	// k−1 modulo n and keeps them in its own file of the work folder
	// (density-<profile>.shard-k-of-n.json), so that shards can run side
	// by side on one folder; shards after the first wait for the first's
	// network levels. Its result is partial (the rows in the folder when it
	// ends; Report renders them alone, without figures or cost table); a
	// run without a shard then reads every file and is the whole
	// experiment. "": every row.
	Shard   string `json:"-"`
	Mixture mixture.FitOptions
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

// targets are c's targets.
func (c Config) targets() Targets {
	return Targets{Offsets: c.Offsets, Quantiles: c.Quantiles, Gain: c.Gain, Untils: c.Untils}
}

// stem is the work files' stem of c's profile.
func (c Config) stem() string { return "density-" + string(c.Profile) }

// shard is c's shard (the whole run when Shard is "" or malformed: Check
// refuses the latter).
func (c Config) shard() workstore.Shard { return workstore.ShardOf(c.Shard) }

// ShardFile is the work file a shard keeps its rows in, and whether c is a
// shard: the CLI runs a shard without a report and names the file.
func (c Config) ShardFile() (string, bool) { return workstore.ShardFile(c.Shard, c.stem()) }

// MNISTQuick and MNISTFull are the two profiles of mnist-density. The full profile
// levels and measures with skip-hutchinson:4, the skip mixture's exact
// trace plus 4 Rademacher probes on the residual (the probes are drawn
// once per sample and kept along its solve, as in FFJORD): on a CPU, the
// exact trace (784 VJPs an evaluation) is out of reach, and Hutchinson-16
// costs about three times as much (figures/mnist-density/NOTES.md).
func MNISTFull() Config {
	return Config{Profile: report.Full, Mixture: *mnist.SkipOptions(), Samples: 16, Steps: 100,
		Offsets: []float64{-300, -100, 100, 300}, Quantiles: []float64{0.05, 0.5, 0.95}, Gain: 10,
		Untils: []float64{0.02, 0.05, 0.1, 0.2}, Traces: []string{"df-tm", "df-tm-c", "hutchinson:4", "hutchinson:16", "skip-hutchinson:4"},
		UntilTraces: []string{"df-tm", "df-tm-c"}, GridTraces: []string{"df-tm-c", "skip-hutchinson:4"}, RefSamples: 64, RefTrace: "skip-hutchinson:4",
		MixtureDraws: 1000, MixtureTimes: 41, MeasureRTol: 1e-3, MeasureProbes: 4,
		CostSteps: 10, CostRounds: 5, Seed: 1}
}

// MNISTQuick is the test profile of mnist-density (minutes).
func MNISTQuick() Config {
	return Config{Profile: report.Quick, Mixture: mixture.FitOptions{Components: 2, PerClass: true, Rank: 2, Shrink: 0.2, Idle: 1e-4, Iters: 2, Seed: 1},
		Samples: 2, Steps: 64, Offsets: []float64{300}, Quantiles: []float64{0.5}, Gain: 10,
		Untils: []float64{0.2}, Traces: []string{"df-tm", "df-tm-c"}, UntilTraces: []string{"df-tm"},
		GridTraces: []string{"df-tm-c"}, RefSamples: 4, RefTrace: "hutchinson:1", MixtureDraws: 20, MixtureTimes: 5, MeasureRTol: 1e-2, MeasureProbes: 1,
		CostSteps: 2, CostRounds: 1, Seed: 1}
}

// Row is one model, trace and target.
type Row struct {
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

// Cost is the cost of density-guided sampling with one trace: the
// median over interleaved rounds of CostSteps RK4 steps of a batch.
type Cost struct {
	Model, Trace string
	PerStep      time.Duration // one RK4 step (4 evaluations with the trace) of the batch
	PerSample    time.Duration // PerStep × Steps / Samples: one sample's guided path
	Rounds       int
}

// Result is the result of RunDensityExp.
type Result struct {
	Config       Config
	Rows         []Row
	MixtureBPD   float64 // the mixture's exact test bpd (1 000 images)
	NetworkAbout string
	Machine      string                      // where the rows were computed (several when resumed elsewhere)
	Measure      string                      // the measurement's trace (skip-hutchinson:K or hutchinson:K)
	Fallbacks    []string                    // skip-hutchinson traces run as hutchinson (no skip)
	Levels       map[string]*pfode.Quantiles // "mixture", "network"
	Costs        []Cost
	// Shard is "k/n" for a shard's partial result ("": the whole run).
	Shard       string
	CostMachine string            // where and on which backend the cost table was measured
	mix         *mixture.Gaussian // the fitted mixture (for the cost table)
	p           *problem.Problem
	// Elapsed is the computing time of every run on the work folder and
	// this one; RowTime the part that made rows (and levels): the earlier
	// runs' and, if this run computed any, this run's up to its cost
	// table; CostTime the cost table's.
	Elapsed, RowTime, CostTime time.Duration
}

// BitsPerDim converts a log-density at t_min (nats) of a sample of p to
// bits per dimension (−log q/(d ln 2) + log₂ Levels − 1 for pixels in
// [−1, 1]).
func BitsPerDim(p *problem.Problem, logq float64) float64 {
	q := likelihood.Quantization{Levels: p.Image.Levels, Lo: -1, Hi: 1}
	v, _ := likelihood.BitsPerDim([]float64{logq}, p.Dim, &q)
	return v[0]
}

// imageProblem is an image problem with what the study adds to it: the
// prior noises (row i from its own stream, so that a row's noise does not
// depend on the batch) and the baseline's exact bpd on test images.
type imageProblem struct {
	*problem.Problem
	who     string // the experiment, prefixing the log
	noise   func(seed uint64, n int) *mat.Dense
	testBPD func(g *mixture.Gaussian) (float64, error)
}

// sampling is how the rows integrate: RK4 with steps steps, log-SNR grid.
func (ip imageProblem) sampling(steps int) SampleConfig {
	return SampleConfig{Schedule: ip.Schedule, Grid: GridLogSNR, Steps: steps}
}

// check validates cfg before any work.
func (cfg Config) check() error {
	if cfg.Samples < 2 || cfg.Steps < 1 || cfg.RefSamples < 2 || cfg.MixtureDraws < 2 || cfg.MixtureTimes < 2 || cfg.CostSteps < 1 || cfg.CostRounds < 1 {
		return fmt.Errorf("density: the experiment needs Samples, RefSamples, MixtureDraws, MixtureTimes ≥ 2 and Steps, CostSteps, CostRounds ≥ 1: %+v", cfg)
	}
	if cfg.Shard != "" {
		if _, err := workstore.ParseShard(cfg.Shard); err != nil {
			return err
		}
	}
	for _, tr := range append(append([]string{cfg.RefTrace}, cfg.Traces...), cfg.UntilTraces...) {
		if _, err := CheckTrace(tr); err != nil {
			return err
		}
	}
	return nil
}

// runImages runs the experiment on ip.
func runImages(ctx context.Context, ip imageProblem, cfg Config, env report.Env) (*Result, error) {
	start := time.Now()
	log := env.LogWriter()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	shard := cfg.shard()
	if !shard.Whole() && env.Work == "" {
		return nil, fmt.Errorf("density: a shard of the experiment needs a work folder to keep its rows in: %w", workstore.ErrWork)
	}
	res := &Result{Config: cfg, Levels: map[string]*pfode.Quantiles{}, Shard: shard.String(), p: ip.Problem}
	nets, err := ip.Networks(ctx, env.Nets)
	if err != nil {
		return nil, err
	}
	res.NetworkAbout = nets.About
	keep, lock, err := openWork(ip.who, env.Work, cfg, nets.Net, ip.Dim, log)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	who := ip.who
	if n := keep.Len(); n > 0 {
		fmt.Fprintf(log, "%s: %d rows read from %s (%s; %.0f s)\n", who, n, env.Work, keep.Where(), keep.ReadSeconds())
	}
	step := progress.Steps(ctx, log, who)
	xT := ip.noise(cfg.Seed, cfg.Samples)
	if err := step("exact mixture", func() error { return res.runMixture(ctx, ip, xT, keep) }); err != nil {
		return nil, err
	}
	if err := step("networks", func() error { return res.runNetworks(ctx, ip, xT, nets.Net, keep, env, log) }); err != nil {
		return nil, err
	}
	res.RowTime = time.Since(start)
	if env.Work != "" {
		res.RowTime = keep.WorkTime()
	}
	costStart := time.Now()
	if res.Shard != "" {
		fmt.Fprintf(log, "%s: shard %s done; %d of its profile's rows are in %s (run without a shard to write the whole report)\n",
			who, res.Shard, keep.Len(), env.Work)
	} else if err := step("cost per guided path", func() error { return res.runCosts(ctx, ip, xT, nets.Net) }); err != nil {
		return nil, err
	} else {
		res.CostTime = time.Since(costStart)
	}
	res.Elapsed = time.Since(start)
	res.Machine = fmt.Sprintf("%s, %s backend", workstore.Machine(), nets.Net.Backend.Name())
	if w := keep.Where(); env.Work != "" && w != "" {
		res.Elapsed, res.Machine = keep.Elapsed(), w
	}
	return res, nil
}
