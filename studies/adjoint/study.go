// Package adjoint is the adjoint-guidance study (paper Figures 3–4 and the
// exact-operator study), written once over a problem: guided sampling with
// a pluggable Fisher operator (dfx/adjoint), each operator's error against
// the exact Fisher of the problem's exact reference, and the cost per
// guided step. `dfx reproduce adjoint` runs it on MNIST (mnist.Problem, its
// classifier rewards) and on the d = 64 Gaussian mixture (toys.GMM, the
// distance to a target between two components).
package adjoint

import (
	"context"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/progress"
	"github.com/dfx-lab/dfx/problem"
)

// Rewards are a problem's differentiable rewards by name, and what the
// study shows of its samples. The study knows no reward of its own: a
// problem's rewards (a classifier's, a distance to a target) come with its
// configuration.
type Rewards interface {
	// Loss is reward name's loss L(x₀) for rows samples (row i may have its
	// own target).
	Loss(name string, rows int) (dfxadjoint.Loss, error)
	// About says in one line what reward name measures (table notes).
	About(name string) string
	// Confidence is a sample-quality score of the samples x in [0, 1] (a
	// classifier's mean max-class probability).
	Confidence(x *mat.Dense) (float64, error)
	// SampleGrid draws rows of samples with a value under each sample and a
	// label per row, and the height the drawing needs.
	SampleGrid(title, xlabel, ylabel string, rows [][]*mat.Dense, values [][]float64, labels []string) (*plot.Plot, vg.Length, error)
}

// The Fisher operators of the study, by the names of its tables: their
// labels in dfx/access's registry (Spec.Label: "vjp", "dfea").
var (
	OperatorVJP  = access.Must(access.OperatorSpec(access.VJPMatVecFamily, 0)).Label() // access.VJPMatVec of the ε-network (eq. Adjoint_VJP)
	OperatorDFEA = access.Must(access.OperatorSpec(access.DFEAFamily, 0)).Label()      // access.DFEA, DF endpoint approximation (eq. EA_approx)
)

// GuidanceConfig sizes the guidance study on a problem with networks:
// paper Figures 3–4 (reward against guided steps and time, VJP against
// DF-EA at one strength), the VJP strength grid search, the cost per guided
// step, and the exact-operator study on the Dirac mixture of the training
// set.
//
// The sampler is the paper's: DDIM with Steps outer steps; guidance on steps
// [WindowEnd − n, WindowEnd) for n in Guided (paper: 50 steps, k from 15 to
// 35, n = 0…20); the gradient normalised; x̂₀ from an InnerSteps-step inner
// DDIM solve with the discrete adjoint through it. The base model is the
// problem's unconditional ε-network, so that every reward has room to move.
type GuidanceConfig struct {
	// Profile names the profile in the report's notes.
	Profile report.Profile
	Seed    uint64

	// RewardSet opens the problem's rewards on the networks of folder nets
	// ("": the committed ones); Rewards are the names of those the study runs.
	RewardSet  func(nets string) (Rewards, error)
	Rewards    []string
	Seeds      int   // samples of each curve point (one batch; ≥ 64 in the full profile)
	Steps      int   // outer DDIM steps
	WindowEnd  int   // guidance stops before this outer step
	Guided     []int // numbers of guided steps of the curves (0 is unguided)
	InnerSteps int   // DDIM steps of the inner x̂₀ solve

	// Strengths is the grid search (paper: 0.1…0.5 for VJP; the full
	// profile adds 0.025 and 0.05 because VJP's best lay at 0.1, the
	// paper's lower edge). The chosen VJP strength drives both operators'
	// curves, as in the paper; DF-EA is searched too, and where its own best
	// differs, its curve at that strength is added.
	Strengths []float64
	GridSeeds int // samples per grid point (the first GridSeeds seeds)
	Fig4Seeds int // columns of Figure 4 (the first seeds of the curve runs)

	CostBatches []int // batch sizes of the cost table
	CostRounds  int   // interleaved rounds of the cost table

	Exact ExactConfig
}

func (c GuidanceConfig) validate() error {
	if c.Seeds < 1 || c.Steps < 1 || c.InnerSteps < 1 || c.WindowEnd < 1 || c.WindowEnd > c.Steps {
		return fmt.Errorf("adjoint: config needs Seeds, Steps, InnerSteps ≥ 1 and 1 ≤ WindowEnd ≤ Steps: %+v", c)
	}
	if c.RewardSet == nil || len(c.Rewards) == 0 || len(c.Guided) == 0 || len(c.Strengths) == 0 {
		return fmt.Errorf("adjoint: config needs rewards, guided-step counts and strengths")
	}
	for _, n := range c.Guided {
		if n < 0 || n > c.WindowEnd {
			return fmt.Errorf("adjoint: %d guided steps do not fit before step %d", n, c.WindowEnd)
		}
	}
	if c.GridSeeds < 1 || c.GridSeeds > c.Seeds || c.Fig4Seeds < 1 || c.Fig4Seeds > c.Seeds {
		return fmt.Errorf("adjoint: GridSeeds %d and Fig4Seeds %d must lie in 1…Seeds (%d)", c.GridSeeds, c.Fig4Seeds, c.Seeds)
	}
	return nil
}

// maxGuided is the largest number of guided steps of the curves.
func (c GuidanceConfig) maxGuided() int { return slices.Max(c.Guided) }

// GuidedRun is one guided sampling run of Seeds (or GridSeeds) samples.
type GuidedRun struct {
	Reward, Operator string // Operator "none" for unguided
	Guided           int
	Strength         float64
	Rewards          []float64 // per sample, of the clipped final image
	Mean, SE         float64
	Seconds          float64 // wall time of the run
	PerSample        float64 // Seconds / samples
	ModelEvals       int     // ε̂ evaluations of the run (each on the whole batch)
	OperatorCalls    int     // Fisher products of the run (each on the whole batch)
	Images           *mat.Dense
}

// GridRow is one point of the strength grid search.
type GridRow struct {
	Reward         string
	Operator       string
	Strength       float64
	Mean, SE       float64
	UnguidedMean   float64
	Chosen         bool
	SecondsPerRun  float64
	ClassifierConf float64 // mean max-class probability: does the sample still read as a digit?
}

// GuidanceResult is everything the guidance study measured on a problem.
type GuidanceResult struct {
	Config   GuidanceConfig
	Problem  string
	Dim      int
	Image    bool // samples are images on [−1, 1] (clipped before they are scored)
	Machine  string
	Backend  string
	Grid     []GridRow
	Strength map[string]float64 // chosen by the VJP grid search, per reward (both operators' curves)
	// OwnStrength is DF-EA's own best strength per reward (its extra curve
	// where it differs from Strength).
	OwnStrength map[string]float64
	Runs        []*GuidedRun // the curves (Figure 3), unguided included per reward
	Cost        []CostRow
	Exact       *ExactStudy
	Elapsed     time.Duration

	rw Rewards // for the figures
}

// guidance is one run of the study: the problem, its network, rewards and
// operators.
type guidance struct {
	p   *problem.Problem
	cfg GuidanceConfig
	net *access.Net
	rw  Rewards
	ops *access.OperatorCache // the Fisher operators built so far, by canonical name
	log io.Writer
}

// RunGuidance runs the guidance study on p's networks (env.Nets) with the
// rewards of cfg.RewardSet.
func RunGuidance(ctx context.Context, p *problem.Problem, cfg GuidanceConfig, env report.Env) (*GuidanceResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if p.Networks == nil {
		return nil, fmt.Errorf("adjoint: problem %s has no networks", p.Name)
	}
	start := time.Now()
	nets, err := p.Networks(ctx, env.Nets)
	if err != nil {
		return nil, err
	}
	rw, err := cfg.RewardSet(env.Nets)
	if err != nil {
		return nil, err
	}
	log := env.LogWriter()
	gd := &guidance{p: p, cfg: cfg, net: nets.Net, rw: rw, ops: &access.OperatorCache{Net: nets.Net}, log: log}
	res := &GuidanceResult{Config: cfg, Problem: p.Name, Dim: p.Dim, Image: p.Image.IsImage(), Machine: machine(), Backend: nets.Net.Backend.Name(),
		Strength: map[string]float64{}, OwnStrength: map[string]float64{}, rw: rw}
	step := progress.Steps(ctx, log, "adjoint")
	if err := step("VJP strength grid search", func() error { return res.runGrid(ctx, gd) }); err != nil {
		return nil, err
	}
	if err := step("Figure 3 curves", func() error { return res.runCurves(ctx, gd) }); err != nil {
		return nil, err
	}
	if err := step("cost per guided step", func() (err error) { res.Cost, err = gd.runCost(ctx); return }); err != nil {
		return nil, err
	}
	if err := step("exact-operator study (Dirac mixture)", func() (err error) {
		s, ok := res.Strength[cfg.Exact.Reward]
		if !ok {
			return fmt.Errorf("the study's reward %q is not among the grid-searched rewards %v", cfg.Exact.Reward, cfg.Rewards)
		}
		res.Exact, err = gd.runExactStudy(ctx, s)
		return
	}); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// machine describes this computer in a few words.
func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}

// operator is the Fisher operator of the access registry's spec name
// (OperatorVJP: the network's VJP, compiled once; OperatorDFEA: DF-EA,
// which needs no network), kept in gd.ops.
func (gd *guidance) operator(name string) (score.FisherOperator, error) {
	op, err := gd.ops.Operator(name)
	if err != nil {
		return nil, fmt.Errorf("adjoint: %w", err)
	}
	return op, nil
}

// clip is clipTo(x, whether the problem's samples are images).
func (gd *guidance) clip(x *mat.Dense) *mat.Dense { return clipTo(x, gd.p.Image.IsImage()) }

// clipTo clamps images to the data range [−1, 1] (a copy); other samples
// (image false) are returned as they are.
func clipTo(x *mat.Dense, image bool) *mat.Dense {
	if !image {
		return x
	}
	out := mat.DenseCopyOf(x)
	raw := out.RawMatrix().Data
	for i, v := range raw {
		raw[i] = math.Max(-1, math.Min(1, v))
	}
	return out
}

// rewards evaluates reward name (−loss) on the clipped samples x.
func (gd *guidance) rewards(name string, x *mat.Dense) ([]float64, error) {
	rows, _ := x.Dims()
	l, err := gd.rw.Loss(name, rows)
	if err != nil {
		return nil, err
	}
	loss, _, err := l(gd.clip(x))
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(loss))
	for i, v := range loss {
		out[i] = -v
	}
	return out, nil
}

// guidedRun samples rows [0, rows) from the unconditional network, guided
// by reward with operator op ("none": unguided) on n steps before the
// window's end, and scores the clipped samples.
func (gd *guidance) guidedRun(ctx context.Context, reward, op string, n, rows int, strength float64) (*GuidedRun, error) {
	cfg := gd.cfg
	g := dfxadjoint.Guide{Schedule: gd.p.Schedule, Model: access.NetModel{Net: gd.net}}
	ac := dfxadjoint.Config{Steps: cfg.Steps, From: cfg.WindowEnd, To: cfg.WindowEnd, InnerSteps: cfg.InnerSteps, Normalize: true}
	if op != "none" && n > 0 {
		o, err := gd.operator(op)
		if err != nil {
			return nil, err
		}
		l, err := gd.rw.Loss(reward, rows)
		if err != nil {
			return nil, err
		}
		g.Operator, g.Loss = o, l
		ac.From, ac.Strength = cfg.WindowEnd-n, strength
	}
	res, err := g.Sample(ctx, gd.p.InitialNoise(cfg.Seed, 0, rows), ac)
	if err != nil {
		return nil, err
	}
	r, err := gd.rewards(reward, res.X)
	if err != nil {
		return nil, err
	}
	m, sd := stat.MeanStdDev(r, nil)
	se := 0.0
	if rows > 1 {
		se = sd / math.Sqrt(float64(rows))
	}
	return &GuidedRun{Reward: reward, Operator: op, Guided: n, Strength: strength, Rewards: r, Mean: m, SE: se,
		Seconds: res.Elapsed.Seconds(), PerSample: res.Elapsed.Seconds() / float64(rows),
		ModelEvals: res.ModelEvals, OperatorCalls: res.OperatorCalls, Images: res.X}, nil
}

// runGrid is the paper's strength search with the largest window, each
// strength in turn for VJP (its best drives both operators' curves, as in
// the paper) and for DF-EA (its own best, beyond the paper).
func (r *GuidanceResult) runGrid(ctx context.Context, gd *guidance) error {
	cfg := r.Config
	n := cfg.maxGuided()
	_, bases, err := gd.unguidedRewards(ctx, cfg.GridSeeds)
	if err != nil {
		return err
	}
	for _, reward := range cfg.Rewards {
		base := bases[reward]
		for _, op := range []string{OperatorVJP, OperatorDFEA} {
			best, bestMean := -1, math.Inf(-1)
			for _, s := range cfg.Strengths {
				run, err := gd.guidedRun(ctx, reward, op, n, cfg.GridSeeds, s)
				if err != nil {
					return err
				}
				conf, err := gd.rw.Confidence(gd.clip(run.Images))
				if err != nil {
					return err
				}
				r.Grid = append(r.Grid, GridRow{Reward: reward, Operator: op, Strength: s, Mean: run.Mean, SE: run.SE, UnguidedMean: stat.Mean(base, nil),
					SecondsPerRun: run.Seconds, ClassifierConf: conf})
				fmt.Fprintf(gd.log, "adjoint: grid %s %s strength %g: reward %.4g ± %.2g (unguided %.4g), %.1fs\n",
					reward, op, s, run.Mean, run.SE, stat.Mean(base, nil), run.Seconds)
				if run.Mean > bestMean {
					best, bestMean = len(r.Grid)-1, run.Mean
				}
			}
			if best < 0 {
				return fmt.Errorf("no strength gave a finite reward for %s with %s", reward, op)
			}
			r.Grid[best].Chosen = true
			if op == OperatorVJP {
				r.Strength[reward] = r.Grid[best].Strength
			} else {
				r.OwnStrength[reward] = r.Grid[best].Strength
			}
		}
	}
	return nil
}

// unguidedRewards samples rows images without guidance and scores them
// under every reward of cfg (the same samples for every reward).
func (gd *guidance) unguidedRewards(ctx context.Context, rows int) (*GuidedRun, map[string][]float64, error) {
	cfg := gd.cfg
	unguided, err := gd.guidedRun(ctx, cfg.Rewards[0], "none", 0, rows, 0)
	if err != nil {
		return nil, nil, err
	}
	bases := map[string][]float64{}
	for _, reward := range cfg.Rewards {
		if bases[reward], err = gd.rewards(reward, unguided.Images); err != nil {
			return nil, nil, err
		}
	}
	return unguided, bases, nil
}

// runCurves runs Figure 3: per reward, VJP and DF-EA at the chosen strength
// for each number of guided steps, and the unguided run (n = 0, the same
// samples for every reward).
func (r *GuidanceResult) runCurves(ctx context.Context, gd *guidance) error {
	cfg := r.Config
	unguided, bases, err := gd.unguidedRewards(ctx, cfg.Seeds)
	if err != nil {
		return err
	}
	for _, reward := range cfg.Rewards {
		base := bases[reward]
		u := *unguided
		u.Reward, u.Rewards = reward, base
		m, sd := stat.MeanStdDev(base, nil)
		u.Mean, u.SE = m, sd/math.Sqrt(float64(len(base)))
		r.Runs = append(r.Runs, &u)
		for _, n := range cfg.Guided {
			if n == 0 {
				continue
			}
			type curve struct {
				op string
				s  float64
			}
			curves := []curve{{OperatorVJP, r.Strength[reward]}, {OperatorDFEA, r.Strength[reward]}}
			if own, ok := r.OwnStrength[reward]; ok && own != r.Strength[reward] {
				curves = append(curves, curve{OperatorDFEA, own})
			}
			for _, c := range curves {
				run, err := gd.guidedRun(ctx, reward, c.op, n, cfg.Seeds, c.s)
				if err != nil {
					return err
				}
				fmt.Fprintf(gd.log, "adjoint: %s %s (strength %g) n=%d: reward %.4g ± %.2g, %.2f s/sample\n", reward, c.op, c.s, n, run.Mean, run.SE, run.PerSample)
				r.Runs = append(r.Runs, run)
			}
		}
	}
	return nil
}

// Run returns the curve run of reward, operator and guided-step count at
// the VJP-chosen strength (the paper's comparison).
func (r *GuidanceResult) Run(reward, op string, n int) *GuidedRun {
	return r.RunAt(reward, op, n, r.Strength[reward])
}

// RunAt is Run at strength s (n = 0: the unguided run).
func (r *GuidanceResult) RunAt(reward, op string, n int, s float64) *GuidedRun {
	for _, run := range r.Runs {
		if run.Reward == reward && run.Guided == n && (n == 0 || run.Operator == op && run.Strength == s) {
			return run
		}
	}
	return nil
}
