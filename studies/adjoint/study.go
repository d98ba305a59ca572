package adjoint

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/report"
)

// The rewards of the adjoint-guidance experiment (see rewards.go for what
// each stands in for). Each is reported as a reward, −L, higher is better.
const (
	RewardClass    = "class"    // log p(k | x₀) of the classifier, target k = row mod 10 (aesthetic / PickScore role)
	RewardStyle    = "style"    // −Gram-matrix style loss on the classifier's hidden features (CLIP style loss role)
	RewardIdentity = "identity" // −distance of penultimate features to a reference (ArcFace identity role)
	RewardCentring = "centring" // −squared offset of the ink's centre of mass (the designed "aesthetic")
)

// Reference images of the style and identity rewards: the first test image
// of each digit (fixed, so the figures can be reproduced).
const (
	StyleRefDigit    = 0
	IdentityRefDigit = 7
)

// AdjointConfig sizes `dfx reproduce adjoint` on MNIST: paper Figures 3–4
// (reward against guided steps and time, VJP against DF-EA at one
// strength), the VJP strength grid search, the cost per guided step, and the
// exact-operator study on the 60 000-image Dirac mixture.
//
// The sampler is the paper's: DDIM with Steps outer steps; guidance on steps
// [WindowEnd − n, WindowEnd) for n in Guided (paper: 50 steps, k from 15 to
// 35, n = 0…20); the gradient normalised; x̂₀ from an InnerSteps-step inner
// DDIM solve with the discrete adjoint through it. The base model is the
// unconditional ε-network (null class), so that every reward has room to
// move (a class-conditional model already satisfies the class reward).
type AdjointConfig struct {
	Quick   bool
	NetsDir string
	Seed    uint64

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
	// differs, its curve at that strength is added (beyond the paper: does
	// DF-EA lose only for want of its own strength?).
	Strengths []float64
	GridSeeds int // samples per grid point (the first GridSeeds seeds)
	Fig4Seeds int // columns of Figure 4 (the first seeds of the curve runs)

	CostBatches []int // batch sizes of the cost table
	CostRounds  int   // interleaved rounds of the cost table

	Exact ExactStudyConfig
}

// AdjointFull is the committed profile.
func AdjointFull() AdjointConfig {
	return AdjointConfig{
		Seed: 1, Rewards: []string{RewardClass, RewardStyle, RewardIdentity, RewardCentring},
		Seeds: 64, Steps: 50, WindowEnd: 35, Guided: []int{0, 5, 10, 15, 20}, InnerSteps: 4,
		Strengths: []float64{0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5}, GridSeeds: 32, Fig4Seeds: 8,
		CostBatches: []int{1, 64}, CostRounds: 5,
		Exact: ExactStudyConfig{Seeds: 8, Guided: 20, ProbeEvery: 5, Reward: RewardClass},
	}
}

// AdjointQuick runs every part at toy size (tests and the notebook).
func AdjointQuick() AdjointConfig {
	return AdjointConfig{
		Quick: true, Seed: 1, Rewards: []string{RewardClass, RewardCentring},
		Seeds: 4, Steps: 10, WindowEnd: 7, Guided: []int{0, 2, 4}, InnerSteps: 2,
		Strengths: []float64{0.1, 0.3}, GridSeeds: 2, Fig4Seeds: 2,
		CostBatches: []int{1}, CostRounds: 1,
		Exact: ExactStudyConfig{Seeds: 2, Guided: 2, ProbeEvery: 2, Reward: RewardClass, Atoms: 2000},
	}
}

// AdjointFor is AdjointQuick or AdjointFull.
func AdjointFor(p report.Profile) AdjointConfig { return report.Pick(p, AdjointQuick, AdjointFull) }

func (c AdjointConfig) validate() error {
	if c.Seeds < 1 || c.Steps < 1 || c.InnerSteps < 1 || c.WindowEnd < 1 || c.WindowEnd > c.Steps {
		return fmt.Errorf("mnist: adjoint config needs Seeds, Steps, InnerSteps ≥ 1 and 1 ≤ WindowEnd ≤ Steps: %+v", c)
	}
	if len(c.Rewards) == 0 || len(c.Guided) == 0 || len(c.Strengths) == 0 {
		return fmt.Errorf("mnist: adjoint config needs rewards, guided-step counts and strengths")
	}
	for _, n := range c.Guided {
		if n < 0 || n > c.WindowEnd {
			return fmt.Errorf("mnist: %d guided steps do not fit before step %d", n, c.WindowEnd)
		}
	}
	if c.GridSeeds < 1 || c.GridSeeds > c.Seeds || c.Fig4Seeds < 1 || c.Fig4Seeds > c.Seeds {
		return fmt.Errorf("mnist: GridSeeds %d and Fig4Seeds %d must lie in 1…Seeds (%d)", c.GridSeeds, c.Fig4Seeds, c.Seeds)
	}
	return nil
}

// maxGuided is the largest number of guided steps of the curves.
func (c AdjointConfig) maxGuided() int { return slices.Max(c.Guided) }

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

// AdjointResult is everything `dfx reproduce adjoint` measured on MNIST.
type AdjointResult struct {
	Config   AdjointConfig
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
}

// RunAdjoint runs the MNIST adjoint-guidance experiment.
func RunAdjoint(ctx context.Context, cfg AdjointConfig, log io.Writer) (*AdjointResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	nets, err := OpenNetworks(cfg.NetsDir)
	if err != nil {
		return nil, err
	}
	test, err := Load(Test)
	if err != nil {
		return nil, err
	}
	res := &AdjointResult{Config: cfg, Machine: Machine(), Backend: nets.Backend.Name(), Strength: map[string]float64{}, OwnStrength: map[string]float64{}}
	rw, err := newRewardSet(nets, test)
	if err != nil {
		return nil, err
	}
	step := stepLogger(ctx, log, "adjoint")
	if err := step("VJP strength grid search", func() error { return res.runGrid(ctx, nets, rw, log) }); err != nil {
		return nil, err
	}
	if err := step("Figure 3 curves", func() error { return res.runCurves(ctx, nets, rw, log) }); err != nil {
		return nil, err
	}
	if err := step("cost per guided step", func() (err error) { res.Cost, err = runCost(ctx, nets, rw, cfg); return }); err != nil {
		return nil, err
	}
	if err := step("exact-operator study (Dirac mixture)", func() (err error) {
		s, ok := res.Strength[cfg.Exact.Reward]
		if !ok {
			return fmt.Errorf("the study's reward %q is not among the grid-searched rewards %v", cfg.Exact.Reward, cfg.Rewards)
		}
		res.Exact, err = runExactStudy(ctx, nets, rw, cfg, s, log)
		return
	}); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// rewardSet builds the reward losses for a number of rows.
type rewardSet struct {
	nets            *Networks
	styleRef, idRef []float64
}

func newRewardSet(nets *Networks, test *Set) (*rewardSet, error) {
	ref := func(digit int) ([]float64, error) {
		for i, l := range test.Labels {
			if int(l) == digit {
				x, err := test.Scaled(i, 1)
				if err != nil {
					return nil, err
				}
				return x.RawRowView(0), nil
			}
		}
		return nil, fmt.Errorf("mnist: no test image of digit %d", digit)
	}
	s, err := ref(StyleRefDigit)
	if err != nil {
		return nil, err
	}
	id, err := ref(IdentityRefDigit)
	if err != nil {
		return nil, err
	}
	return &rewardSet{nets: nets, styleRef: s, idRef: id}, nil
}

// loss is the loss of reward name for rows samples (the class reward's
// target of row i is i mod 10).
func (r *rewardSet) loss(name string, rows int) (adjoint.Loss, error) {
	switch name {
	case RewardClass:
		target := make([]int, rows)
		for i := range target {
			target[i] = i % 10
		}
		return r.nets.ClassReward(target...)
	case RewardStyle:
		return r.nets.StyleReward(r.styleRef)
	case RewardIdentity:
		return r.nets.IdentityReward(r.idRef)
	case RewardCentring:
		return CentringReward(), nil
	}
	return nil, fmt.Errorf("mnist: unknown reward %q (want %s, %s, %s or %s)", name, RewardClass, RewardStyle, RewardIdentity, RewardCentring)
}

// rewards evaluates reward name (−loss) on the clipped images x.
func (r *rewardSet) rewards(name string, x *mat.Dense) ([]float64, error) {
	rows, _ := x.Dims()
	l, err := r.loss(name, rows)
	if err != nil {
		return nil, err
	}
	loss, _, err := l(Clip(x))
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
func guidedRun(ctx context.Context, nets *Networks, rw *rewardSet, cfg AdjointConfig, reward, op string, n, rows int, strength float64) (*GuidedRun, error) {
	g := adjoint.Guide{Schedule: Schedule(), Model: access.NetModel{Net: nets.Net}}
	ac := adjoint.Config{Steps: cfg.Steps, From: cfg.WindowEnd, To: cfg.WindowEnd, InnerSteps: cfg.InnerSteps, Normalize: true}
	if op != "none" && n > 0 {
		o, err := nets.Operator(op)
		if err != nil {
			return nil, err
		}
		l, err := rw.loss(reward, rows)
		if err != nil {
			return nil, err
		}
		g.Operator, g.Loss = o, l
		ac.From, ac.Strength = cfg.WindowEnd-n, strength
	}
	res, err := g.Sample(ctx, InitialNoise(cfg.Seed, 0, rows), ac)
	if err != nil {
		return nil, err
	}
	r, err := rw.rewards(reward, res.X)
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
func (r *AdjointResult) runGrid(ctx context.Context, nets *Networks, rw *rewardSet, log io.Writer) error {
	cfg := r.Config
	n := cfg.maxGuided()
	_, bases, err := unguidedRewards(ctx, nets, rw, cfg, cfg.GridSeeds)
	if err != nil {
		return err
	}
	for _, reward := range cfg.Rewards {
		base := bases[reward]
		for _, op := range []string{OperatorVJP, OperatorDFEA} {
			best, bestMean := -1, math.Inf(-1)
			for _, s := range cfg.Strengths {
				run, err := guidedRun(ctx, nets, rw, cfg, reward, op, n, cfg.GridSeeds, s)
				if err != nil {
					return err
				}
				conf, err := meanConfidence(nets, run.Images)
				if err != nil {
					return err
				}
				r.Grid = append(r.Grid, GridRow{Reward: reward, Operator: op, Strength: s, Mean: run.Mean, SE: run.SE, UnguidedMean: stat.Mean(base, nil),
					SecondsPerRun: run.Seconds, ClassifierConf: conf})
				fmt.Fprintf(log, "adjoint: grid %s %s strength %g: reward %.4g ± %.2g (unguided %.4g), %.1fs\n", reward, op, s, run.Mean, run.SE, stat.Mean(base, nil), run.Seconds)
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
func unguidedRewards(ctx context.Context, nets *Networks, rw *rewardSet, cfg AdjointConfig, rows int) (*GuidedRun, map[string][]float64, error) {
	unguided, err := guidedRun(ctx, nets, rw, cfg, cfg.Rewards[0], "none", 0, rows, 0)
	if err != nil {
		return nil, nil, err
	}
	bases := map[string][]float64{}
	for _, reward := range cfg.Rewards {
		if bases[reward], err = rw.rewards(reward, unguided.Images); err != nil {
			return nil, nil, err
		}
	}
	return unguided, bases, nil
}

// meanConfidence is the classifier's mean max-class probability of the
// clipped images (a sample that no longer reads as any digit scores low).
func meanConfidence(nets *Networks, x *mat.Dense) (float64, error) {
	lp, _, err := nets.Classifier.LogProbs(Clip(x))
	if err != nil {
		return 0, err
	}
	rows, k := lp.Dims()
	s := 0.0
	for i := range rows {
		m := math.Inf(-1)
		for j := range k {
			m = math.Max(m, lp.At(i, j))
		}
		s += math.Exp(m)
	}
	return s / float64(rows), nil
}

// runCurves runs Figure 3: per reward, VJP and DF-EA at the chosen strength
// for each number of guided steps, and the unguided run (n = 0, the same
// samples for every reward).
func (r *AdjointResult) runCurves(ctx context.Context, nets *Networks, rw *rewardSet, log io.Writer) error {
	cfg := r.Config
	unguided, bases, err := unguidedRewards(ctx, nets, rw, cfg, cfg.Seeds)
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
				run, err := guidedRun(ctx, nets, rw, cfg, reward, c.op, n, cfg.Seeds, c.s)
				if err != nil {
					return err
				}
				fmt.Fprintf(log, "adjoint: %s %s (strength %g) n=%d: reward %.4g ± %.2g, %.2f s/sample\n", reward, c.op, c.s, n, run.Mean, run.SE, run.PerSample)
				r.Runs = append(r.Runs, run)
			}
		}
	}
	return nil
}

// Run returns the curve run of reward, operator and guided-step count at
// the VJP-chosen strength (the paper's comparison).
func (r *AdjointResult) Run(reward, op string, n int) *GuidedRun {
	return r.RunAt(reward, op, n, r.Strength[reward])
}

// RunAt is Run at strength s (n = 0: the unguided run).
func (r *AdjointResult) RunAt(reward, op string, n int, s float64) *GuidedRun {
	for _, run := range r.Runs {
		if run.Reward == reward && run.Guided == n && (n == 0 || run.Operator == op && run.Strength == s) {
			return run
		}
	}
	return nil
}
