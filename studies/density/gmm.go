package toys

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/models"
)

// DensityConfig configures the density-guidance study on analytic
// Gaussian mixtures (issue 24, item 2): the mixture of the adjoint study
// (NewGMM) in each of Dims dimensions, whose log q_t, score and
// Fisher trace are exact at every t; samples guided to quantiles of
// log q_t (Level targets) and by offsets per unit time, first with the
// exact model and trace, then with an ε-network trained on draws of the
// mixture and each trace estimator (VJP, Hutchinson, DF-TM, centred
// DF-TM). The achieved log-density is always the mixture's exact log q at
// the end point.
type DensityConfig struct {
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

// DensityQuick is the test profile (seconds).
func DensityQuick() DensityConfig {
	return DensityConfig{Dims: []int{2, 8}, Components: 4, TrainSamples: 2048, TrainSteps: 300, Width: 32, Depth: 1,
		Samples: 8, Steps: 40, TMin: 0.01, Quantiles: []float64{0.1, 0.5}, Offsets: []float64{-20}, Gain: 10, Untils: []float64{0.1},
		RefSamples: 400, RefTimes: 21, HutchK: 2, Seed: 1}
}

// DensityFull is the profile of the committed report.
func DensityFull() DensityConfig {
	return DensityConfig{Dims: []int{2, 64}, Components: 8, TrainSamples: 8192, TrainSteps: 3000, Width: 256, Depth: 2,
		Samples: 64, Steps: 200, TMin: 0.01, Quantiles: []float64{0.05, 0.25, 0.5, 0.75, 0.95}, Offsets: []float64{-20, 20}, Gain: 10,
		Untils: []float64{0.02, 0.05, 0.1, 0.2}, RefSamples: 4000, RefTimes: 101, HutchK: 4, Seed: 1}
}

// The density-guidance methods: the model and the trace it is tracked and
// steered with.
const (
	DensityExact = "exact" // score.Exact: the mixture's score and trace
	DensityVJP   = "vjp"   // network + exact VJP trace (d VJPs)
	DensityDFTM  = "df-tm"
	DensityDFTMC = "df-tm-c"
)

// densityHutch names the Hutchinson method with k probes.
func densityHutch(k int) string { return fmt.Sprintf("hutchinson-%d", k) }

// DensityRow is one method and target in one dimension.
type DensityRow struct {
	Dim    int
	Method string
	// Target is "none", "offset P" or "q=p"; Level is the target log q at
	// TMin for a quantile target (NaN otherwise).
	Target string
	Level  float64
	// Achieved is the mixture's exact log q_TMin at the end points;
	// Miss = Achieved − Level; AbsMiss its absolute value (mean ± SE over
	// samples).
	Achieved, Miss, AbsMiss MeanSE
	// Tracked is the mean |ℓ − log q| at the end: how far the ℓ the guide
	// steered by is from the truth (the model's and the trace's error).
	Tracked MeanSE
	// AtMode counts samples that end below a quantile level at a mode
	// (‖s‖² < tr F/10): levels above that mode's height are infeasible.
	AtMode    int
	Limited   float64 // fraction of guided evaluations whose λ was more than halved
	PerSample time.Duration
	NFE       int
}

// DensityResult is the result of RunDensity.
type DensityResult struct {
	Config    DensityConfig
	Schedule  string
	Rows      []DensityRow
	Quantiles map[int]*pfode.Quantiles // by dimension: the exact quantile curves
	// RefQuantiles[d][method] are the quantiles at TMin that each method's
	// unguided samples give, ℓ carried from the prior with its trace: how a
	// network's levels are obtained without exact samples.
	RefQuantiles map[int]map[string][]float64
	TrainTime    time.Duration
	Elapsed      time.Duration
}

// densityMethod is a model and its trace estimator; exact methods start ℓ
// at the exact log q_T, networks at the prior's log-density.
type densityMethod struct {
	name  string
	model score.Model
	exact bool
}

// RunDensity runs the study.
func RunDensity(ctx context.Context, cfg DensityConfig) (*DensityResult, error) {
	start := time.Now()
	if len(cfg.Dims) == 0 || cfg.Components < 1 || cfg.Samples < 2 || cfg.Steps < 1 || !(cfg.TMin > 0) || cfg.RefSamples < 2 || cfg.RefTimes < 2 {
		return nil, fmt.Errorf("toys: density config needs Dims, Components ≥ 1, Samples ≥ 2, Steps ≥ 1, TMin > 0, RefSamples ≥ 2, RefTimes ≥ 2: %+v", cfg)
	}
	s, err := schedule.ByName("vp", schedule.Params{})
	if err != nil {
		return nil, err
	}
	res := &DensityResult{Config: cfg, Schedule: s.Name(), Quantiles: map[int]*pfode.Quantiles{}, RefQuantiles: map[int]map[string][]float64{}}
	for _, d := range cfg.Dims {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(d)))
		prob, err := NewGMM(d, cfg.Components, rng)
		if err != nil {
			return nil, err
		}
		q, err := exactQuantiles(s, prob.Mix, cfg, rng)
		if err != nil {
			return nil, err
		}
		res.Quantiles[d] = q
		methods := []densityMethod{{name: DensityExact, model: score.Exact{Mixture: prob.Mix}, exact: true}}
		if cfg.TrainSteps > 0 {
			t0 := time.Now()
			nets, err := densityNetMethods(ctx, cfg, s, prob.Sample(cfg.TrainSamples, rng))
			if err != nil {
				return nil, err
			}
			res.TrainTime += time.Since(t0)
			methods = append(methods, nets...)
		}
		res.RefQuantiles[d] = map[string][]float64{}
		for _, m := range methods {
			rows, ref, err := densityRuns(ctx, cfg, s, prob.Mix, q, m, d)
			if err != nil {
				return nil, fmt.Errorf("toys: density d = %d, %s: %w", d, m.name, err)
			}
			res.Rows = append(res.Rows, rows...)
			res.RefQuantiles[d][m.name] = ref
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// exactQuantiles are the quantiles of log q_t(X_t), X_t ~ q_t, on a uniform
// grid from T = 1 to TMin: RefSamples exact draws of q_t at each time and
// the closed-form log q_t.
func exactQuantiles(s schedule.Schedule, mix *mixture.Gaussian, cfg DensityConfig, rng *rand.Rand) (*pfode.Quantiles, error) {
	grid := uniformTimes(1, cfg.TMin, cfg.RefTimes-1)
	cs := make([]schedule.Coefficients, len(grid))
	for i, t := range grid {
		var err error
		if cs[i], err = schedule.At(s, t); err != nil {
			return nil, err
		}
	}
	ells, err := mix.DiffusedLogProbs(rng, cfg.RefSamples, cs)
	if err != nil {
		return nil, err
	}
	return pfode.QuantilesOf(grid, ells, cfg.Quantiles, fmt.Sprintf("%d exact draws x_t = α x₀ + σ ε of q_t (the same x₀ and ε at each of %d times: smooth curves), closed-form log q_t", cfg.RefSamples, len(grid)))
}

// uniformTimes is t1, …, t0 in m equal steps.
func uniformTimes(t1, t0 float64, m int) []float64 {
	g := make([]float64, m+1)
	for i := range g {
		g[i] = t1 + (t0-t1)*float64(i)/float64(m)
	}
	g[m] = t0
	return g
}

// densityNetMethods trains the ε-network, t_θ and ν_θ on data and returns
// the network with each trace estimator.
func densityNetMethods(ctx context.Context, cfg DensityConfig, s schedule.Schedule, data [][]float64) ([]densityMethod, error) {
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
	vjp, err := access.NewVJPTrace(net, 0)
	if err != nil {
		return nil, err
	}
	hut, err := access.NewHutchinson(net, cfg.HutchK, access.Rademacher, cfg.Seed)
	if err != nil {
		return nil, err
	}
	dftm, err := access.NewDFTM(net)
	if err != nil {
		return nil, err
	}
	dftmc, err := access.NewDFTMCentred(net)
	if err != nil {
		return nil, err
	}
	var out []densityMethod
	for _, e := range []struct {
		name string
		est  score.TraceEstimator
	}{{DensityVJP, vjp}, {densityHutch(cfg.HutchK), hut}, {DensityDFTM, dftm}, {DensityDFTMC, dftmc}} {
		out = append(out, densityMethod{name: e.name, model: access.NetModel{Net: net, Trace: e.est}})
	}
	return out, nil
}

// densityTarget is one target of the study.
type densityTarget struct {
	name   string
	target pfode.DensityTarget
	level  float64 // log q asked at TMin (NaN: none)
	until  float64
}

// densityTargets are the study's targets in table order: none, the
// offsets, the quantile levels, then the median level with guidance
// stopped below each of Untils.
func densityTargets(cfg DensityConfig, q *pfode.Quantiles) []densityTarget {
	out := []densityTarget{{name: "none", level: math.NaN()}}
	for _, o := range cfg.Offsets {
		out = append(out, densityTarget{fmt.Sprintf("offset %+g", o), pfode.Offset{PerUnitTime: o}, math.NaN(), cfg.Until})
	}
	last, mid := len(q.Times)-1, 0
	for k, p := range q.Ps {
		out = append(out, densityTarget{fmt.Sprintf("q=%g", p), q.Level(k, cfg.Gain), q.Values[last][k], cfg.Until})
		if math.Abs(p-0.5) < math.Abs(q.Ps[mid]-0.5) {
			mid = k
		}
	}
	for _, u := range cfg.Untils {
		out = append(out, densityTarget{fmt.Sprintf("q=%g, until %g", q.Ps[mid], u), q.Level(mid, cfg.Gain), q.Values[last][mid], u})
	}
	return out
}

// densityRuns guides cfg.Samples prior draws with method m to every target
// and scores the end points against the exact mixture; it also returns the
// quantiles at TMin of the unguided run's tracked ℓ.
func densityRuns(ctx context.Context, cfg DensityConfig, s schedule.Schedule, mix *mixture.Gaussian, q *pfode.Quantiles, m densityMethod, d int) ([]DensityRow, []float64, error) {
	src := schedule.Continuous{Schedule: s}
	grid := uniformTimes(1, cfg.TMin, cfg.Steps)
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
	var rows []DensityRow
	var ref []float64
	for _, tg := range densityTargets(cfg, q) {
		sys := pfode.New(src, m.model, cfg.Samples, d, pfode.LogDensity)
		gd := &pfode.DensityGuide{Target: tg.target, Start: start, Until: tg.until}
		sys.Guide = gd
		y := sys.Init(xT, nil)
		t0 := time.Now()
		st, err := pfode.Solve(ctx, sys, pfode.RK4, grid, y, nil)
		if err != nil {
			return nil, nil, err
		}
		elapsed := time.Since(t0)
		x := sys.X(y)
		ell := append([]float64(nil), sys.LogDensity(y)...)
		floats.Add(ell, start)
		ex, err := mix.Eval(mixture.Query{At: c0, X: x, Want: mixture.LogProb | mixture.Score | mixture.Trace})
		if err != nil {
			return nil, nil, err
		}
		row := DensityRow{Dim: d, Method: m.name, Target: tg.name, Level: tg.level, Achieved: meanSE(ex.LogProb),
			PerSample: elapsed / time.Duration(cfg.Samples), NFE: st.NFE}
		if gd.Evals > 0 {
			row.Limited = float64(gd.Limited) / float64(gd.Evals)
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
		row.Tracked = meanSE(track)
		if !math.IsNaN(tg.level) {
			row.Miss, row.AbsMiss = meanSE(miss), meanSE(abs)
		} else {
			row.Miss, row.AbsMiss = MeanSE{math.NaN(), math.NaN()}, MeanSE{math.NaN(), math.NaN()}
			row.AtMode = 0
		}
		if tg.target == nil {
			ref = pfode.EmpiricalQuantiles(ell, cfg.Quantiles)
		}
		rows = append(rows, row)
	}
	return rows, ref, nil
}
