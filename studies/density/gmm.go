package density

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/tensormat"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/problem"
	"github.com/dfx-lab/dfx/toys"
)

// GMMConfig configures density guidance on analytic Gaussian mixtures
// (`dfx reproduce density`): the mixture problem of the adjoint study
// (toys.NewGMM) in each of Dims dimensions, whose log q_t, score and
// Fisher trace are exact at every t; samples guided to quantiles of
// log q_t (Level targets) and by offsets per unit time, first with the
// exact model and trace, then with an ε-network trained on draws of the
// mixture and each trace estimator (VJP, Hutchinson, DF-TM, centred
// DF-TM). The achieved log-density is always the mixture's exact log q at
// the end point.
type GMMConfig struct {
	Dims       []int
	Components int
	// TrainSamples draws train the ε-network (v-prediction, as in the
	// adjoint study), t_θ and ν_θ for TrainSteps steps each; residual MLP
	// of Width × Depth. TrainSteps 0: exact model only.
	TrainSamples, TrainSteps, Width, Depth int
	// Samples guided samples per target and method, from the same prior
	// noises; Steps RK4 steps on a uniform grid from T = 1 to TMin.
	Samples, Steps int
	TMin           float64
	// Quantiles are the Level targets (quantiles of log q_t under q_t,
	// from RefSamples exact draws of q_t at RefTimes times and the closed
	// form), held with Gain; Offsets are Offset targets in nats per unit
	// time. Until: no guidance below this t.
	Quantiles   []float64
	Offsets     []float64
	Gain, Until float64
	// Untils repeat the median level (the quantile nearest 0.5) with
	// guidance stopped below each of these times: where the learned traces
	// are too poor to steer by (DF-TM's α²/σ⁴ amplification at small t).
	Untils               []float64
	RefSamples, RefTimes int
	HutchK               int
	Seed                 uint64
}

// GMMQuick is the test profile (seconds).
func GMMQuick() GMMConfig {
	return GMMConfig{Dims: []int{2, 8}, Components: 4, TrainSamples: 2048, TrainSteps: 300, Width: 32, Depth: 1,
		Samples: 8, Steps: 40, TMin: 0.01, Quantiles: []float64{0.1, 0.5}, Offsets: []float64{-20}, Gain: 10, Untils: []float64{0.1},
		RefSamples: 400, RefTimes: 21, HutchK: 2, Seed: 1}
}

// GMMFull is the profile of the committed report.
func GMMFull() GMMConfig {
	return GMMConfig{Dims: []int{2, 64}, Components: 8, TrainSamples: 8192, TrainSteps: 3000, Width: 256, Depth: 2,
		Samples: 64, Steps: 200, TMin: 0.01, Quantiles: []float64{0.05, 0.25, 0.5, 0.75, 0.95}, Offsets: []float64{-20, 20}, Gain: 10,
		Untils: []float64{0.02, 0.05, 0.1, 0.2}, RefSamples: 4000, RefTimes: 101, HutchK: 4, Seed: 1}
}

// GMMFor is GMMQuick or GMMFull.
func GMMFor(p report.Profile) GMMConfig { return report.Pick(p, GMMQuick, GMMFull) }

// MethodExact is the mixture's own score and trace (score.Exact), the
// method of the exact rows.
const MethodExact = "exact"

// gmmTraces are the network's methods: each trace's label (as the tables
// print it) and its name (TraceModel).
func gmmTraces(hutchK int) [][2]string {
	return [][2]string{{"vjp", "vjp"}, {fmt.Sprintf("hutchinson-%d", hutchK), fmt.Sprintf("hutchinson:%d", hutchK)}, {"df-tm", "df-tm"}, {"df-tm-c", "df-tm-c"}}
}

// GMMRow is one method and target in one dimension.
type GMMRow struct {
	Dim    int
	Method string
	// Target is "none", "offset P" or "q=p"; Level is the target log q at
	// TMin for a quantile target (NaN otherwise).
	Target string
	Level  float64
	// Achieved is the mixture's exact log q_TMin at the end points;
	// Miss = Achieved − Level; AbsMiss its absolute value (mean ± SE over
	// samples).
	Achieved, Miss, AbsMiss stats.Estimate
	// Tracked is the mean |ℓ − log q| at the end: how far the ℓ the guide
	// steered by is from the truth (the model's and the trace's error).
	Tracked stats.Estimate
	// AtMode counts samples that end below a quantile level at a mode
	// (‖s‖² < tr F/10): levels above that mode's height are infeasible.
	AtMode    int
	Limited   float64 // fraction of guided evaluations whose λ was more than halved
	PerSample time.Duration
	NFE       int
}

// GMMResult is the result of RunGMM.
type GMMResult struct {
	Config    GMMConfig
	Schedule  string
	Rows      []GMMRow
	Quantiles map[int]*pfode.Quantiles // by dimension: the exact quantile curves
	// RefQuantiles[d][method] are the quantiles at TMin that each method's
	// unguided samples give, ℓ carried from the prior with its trace: how a
	// network's levels are obtained without exact samples.
	RefQuantiles map[int]map[string][]float64
	TrainTime    time.Duration
	Elapsed      time.Duration
}

// gmmMethod is a model and its trace estimator; exact methods start ℓ
// at the exact log q_T, networks at the prior's log-density.
type gmmMethod struct {
	name  string
	model score.Model
	exact bool
}

// RunGMM runs the study: for each dimension d of Dims, the mixture
// problem toys.NewGMM(d, Components) drawn from the stream (Seed, d), which
// then draws the exact levels and the networks' training data.
func RunGMM(ctx context.Context, cfg GMMConfig) (*GMMResult, error) {
	start := time.Now()
	if len(cfg.Dims) == 0 || cfg.Components < 1 || cfg.Samples < 2 || cfg.Steps < 1 || !(cfg.TMin > 0) || cfg.RefSamples < 2 || cfg.RefTimes < 2 {
		return nil, fmt.Errorf("density: config needs Dims, Components ≥ 1, Samples ≥ 2, Steps ≥ 1, TMin > 0, RefSamples ≥ 2, RefTimes ≥ 2: %+v", cfg)
	}
	s, err := schedule.ByName("vp", schedule.Params{})
	if err != nil {
		return nil, err
	}
	res := &GMMResult{Config: cfg, Schedule: s.Name(), Quantiles: map[int]*pfode.Quantiles{}, RefQuantiles: map[int]map[string][]float64{}}
	for _, d := range cfg.Dims {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(d)))
		g, err := toys.NewGMM(d, cfg.Components, rng)
		if err != nil {
			return nil, err
		}
		p := g.Problem(fmt.Sprintf("gmm-%d", d), s)
		p.Train = func(context.Context) (*mat.Dense, error) { return tensormat.Rows(g.Sample(cfg.TrainSamples, rng)), nil }
		if err := res.runProblem(ctx, p, rng); err != nil {
			return nil, err
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// runProblem adds the rows of problem p, whose Exact is a Gaussian mixture
// and whose Train draws the networks' training data: its exact levels
// (from rng), the exact method's rows, and (TrainSteps > 0) the rows of
// the networks trained on Train with each trace.
func (res *GMMResult) runProblem(ctx context.Context, p *problem.Problem, rng *rand.Rand) error {
	cfg, d := res.Config, p.Dim
	ex, err := p.Exact(ctx)
	if err != nil {
		return err
	}
	mix, ok := ex.(*mixture.Gaussian)
	if !ok {
		return fmt.Errorf("density: problem %s: the exact reference is not a Gaussian mixture", p.Name)
	}
	sc := SampleConfig{Schedule: p.Schedule, Grid: GridUniform, TMin: cfg.TMin, Steps: cfg.RefTimes - 1}
	grid, err := sc.Times()
	if err != nil {
		return err
	}
	how := fmt.Sprintf("%d exact draws x_t = α x₀ + σ ε of q_t (the same x₀ and ε at each of %d times: smooth curves), closed-form log q_t",
		cfg.RefSamples, len(grid))
	q, err := ExactLevels(mix, p.Schedule, grid, cfg.Quantiles, cfg.RefSamples, rng, how)
	if err != nil {
		return err
	}
	res.Quantiles[d] = q
	methods := []gmmMethod{{name: MethodExact, model: score.Exact{Mixture: mix}, exact: true}}
	if cfg.TrainSteps > 0 {
		t0 := time.Now()
		data, err := p.Train(ctx)
		if err != nil {
			return err
		}
		nets, err := gmmNetMethods(ctx, cfg, p.Schedule, data)
		if err != nil {
			return err
		}
		res.TrainTime += time.Since(t0)
		methods = append(methods, nets...)
	}
	res.RefQuantiles[d] = map[string][]float64{}
	for _, m := range methods {
		rows, ref, err := gmmRuns(ctx, cfg, p.Schedule, mix, q, m, d)
		if err != nil {
			return fmt.Errorf("density: d = %d, %s: %w", d, m.name, err)
		}
		res.Rows = append(res.Rows, rows...)
		res.RefQuantiles[d][m.name] = ref
	}
	return nil
}

// gmmNetMethods trains the ε-network, t_θ and ν_θ on data [N, d] and
// returns the network with each trace estimator.
func gmmNetMethods(ctx context.Context, cfg GMMConfig, s schedule.Schedule, x *mat.Dense) ([]gmmMethod, error) {
	n, _ := x.Dims()
	data := make([][]float64, n)
	for i := range data {
		data[i] = x.RawRowView(i)
	}
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamWidth: cfg.Width, models.ParamDepth: cfg.Depth,
		models.ParamCosineSteps: cfg.TrainSteps, models.ParamSeed: int(cfg.Seed), models.ParamBatchSize: 128,
		models.ParamParam: "v", models.ParamWeighting: "v"})
	tb := models.MustNewTrainBackend()
	for _, obj := range []models.Objective{models.DSM, models.DFTM, models.DFTMCentred} {
		tr, err := models.NewTrainer(tb, store, s, obj, data, nil)
		if err != nil {
			return nil, err
		}
		if _, err := tr.Run(ctx, models.Loop{To: int64(cfg.TrainSteps)}); err != nil {
			return nil, err
		}
	}
	net, err := models.NewAccessNet(models.MustNewBackend(), store, s, true)
	if err != nil {
		return nil, err
	}
	var out []gmmMethod
	for _, tr := range gmmTraces(cfg.HutchK) {
		m, err := TraceModel(net, tr[1], cfg.Seed, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, gmmMethod{name: tr[0], model: m})
	}
	return out, nil
}

// targets are cfg's targets.
func (cfg GMMConfig) targets() Targets {
	return Targets{Offsets: cfg.Offsets, Quantiles: cfg.Quantiles, Gain: cfg.Gain, Until: cfg.Until, Untils: cfg.Untils}
}

// gmmRuns guides cfg.Samples prior draws with method m to every target
// and scores the end points against the exact mixture; it also returns the
// quantiles at TMin of the unguided run's tracked ℓ.
func gmmRuns(ctx context.Context, cfg GMMConfig, s schedule.Schedule, mix *mixture.Gaussian, q *pfode.Quantiles, m gmmMethod,
	d int) ([]GMMRow, []float64, error) {
	sc := SampleConfig{Schedule: s, Grid: GridUniform, TMin: cfg.TMin, Steps: cfg.Steps}
	grid, err := sc.Times()
	if err != nil {
		return nil, nil, err
	}
	cT, err := schedule.At(s, grid[0])
	if err != nil {
		return nil, nil, err
	}
	c0, err := schedule.At(s, cfg.TMin)
	if err != nil {
		return nil, nil, err
	}
	xT := schedule.SamplePrior(cT, cfg.Samples, d, rand.New(rand.NewPCG(cfg.Seed, 99)))
	start := schedule.PriorLogProb(cT, xT)
	if m.exact {
		r, err := mix.Eval(mixture.Query{At: cT, X: xT, Want: mixture.LogProb})
		if err != nil {
			return nil, nil, err
		}
		start = r.LogProb
	}
	var rows []GMMRow
	var ref []float64
	for _, tg := range cfg.targets().list(q, true) {
		sc.Until = tg.until
		run, err := Sample(ctx, m.model, tg.target, xT, start, sc, nil)
		if err != nil {
			return nil, nil, err
		}
		ell := run.Ell
		ex, err := mix.Eval(mixture.Query{At: c0, X: run.X, Want: mixture.LogProb | mixture.Score | mixture.Trace})
		if err != nil {
			return nil, nil, err
		}
		row := GMMRow{Dim: d, Method: m.name, Target: tg.name, Level: tg.level, Achieved: stats.EstimateOf(ex.LogProb),
			PerSample: run.Time / time.Duration(cfg.Samples), NFE: run.NFE}
		if run.Guide.Evals > 0 {
			row.Limited = float64(run.Guide.Limited) / float64(run.Guide.Evals)
		}
		track, miss, abs := make([]float64, cfg.Samples), make([]float64, cfg.Samples), make([]float64, cfg.Samples)
		for k := range track {
			track[k] = math.Abs(ell[k] - ex.LogProb[k])
			miss[k] = ex.LogProb[k] - tg.level
			abs[k] = math.Abs(miss[k])
			sr := ex.Score.RawRowView(k)
			if miss[k] < 0 && floats.Dot(sr, sr) < ex.Trace[k]/10 {
				row.AtMode++
			}
		}
		row.Tracked = stats.EstimateOf(track)
		if !math.IsNaN(tg.level) {
			row.Miss, row.AbsMiss = stats.EstimateOf(miss), stats.EstimateOf(abs)
		} else {
			row.Miss, row.AbsMiss = stats.Estimate{Mean: math.NaN(), SE: math.NaN()}, stats.Estimate{Mean: math.NaN(), SE: math.NaN()}
			row.AtMode = 0
		}
		if tg.target == nil {
			ref = pfode.EmpiricalQuantiles(ell, cfg.Quantiles)
		}
		rows = append(rows, row)
	}
	return rows, ref, nil
}
