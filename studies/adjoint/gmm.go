package adjoint

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/toys"
)

// GMMConfig configures the Gaussian-mixture half of the
// exact-operator study of adjoint guidance: an
// anisotropic Gaussian mixture in Dim dimensions whose exact ε and Fisher
// are known, an ε-network trained on TrainSamples draws of it, and adjoint
// guidance (dfx/adjoint) toward a target between two components with the
// exact, VJP and DF-EA Fisher operators.
type GMMConfig struct {
	Dim, Components int
	// TrainSamples draws of the mixture train the ε-network (DSM) for
	// TrainSteps steps; residual MLP of Width × Depth. EMA weights are used
	// when TrainSteps ≥ 2000.
	TrainSamples, TrainSteps, Width, Depth int
	// Seeds is the number of sampling chains (initial noises), shared by
	// every method.
	Seeds int
	// OuterSteps DDIM steps on the VP schedule, guidance on the outer steps
	// [From, To), InnerSteps DDIM steps in each inner solve (dfxadjoint.Config).
	OuterSteps, From, To, InnerSteps int
	Strength                         float64
	Normalize                        bool
	Seed                             uint64
}

// GMMQuick is the test profile (seconds).
func GMMQuick() GMMConfig {
	return GMMConfig{Dim: 8, Components: 4, TrainSamples: 2048, TrainSteps: 200, Width: 32, Depth: 1, Seeds: 4,
		OuterSteps: 20, From: 6, To: 14, InnerSteps: 3, Strength: 0.3, Normalize: true, Seed: 1}
}

// GMMFull is the profile of the report (a few minutes on 2 cores,
// most of it training). 1 000 steps of a 128×2 network left ε 46 % off at
// t = 0.32 and its unguided samples at log q ≈ −490 (typical data: +7).
func GMMFull() GMMConfig {
	return GMMConfig{Dim: 64, Components: 8, TrainSamples: 8192, TrainSteps: 3000, Width: 256, Depth: 2, Seeds: 128,
		OuterSteps: 50, From: 15, To: 35, InnerSteps: 4, Strength: 0.3, Normalize: true, Seed: 1}
}

// The gradient methods, in table order: the guide's model and operator.
const (
	GMMExact     = "exact"           // score.Exact as model and operator
	GMMVJP       = "vjp"             // access.NetModel + access.VJPMatVec
	GMMEANet     = "df-ea (net)"     // access.NetModel + access.DFEA
	GMMEAExact   = "df-ea (exact ȳ)" // score.Exact + access.DFEA
	GMMUnguided  = "unguided (exact ε)"
	GMMUnguidedN = "unguided (net)"
)

// GMMMethods are the gradient methods in table order.
var GMMMethods = []string{GMMExact, GMMVJP, GMMEANet, GMMEAExact}

// MeanSE is a mean and its standard error over seeds (stats.EstimateOf).
type MeanSE = stats.Estimate

// GMMStep is one guided outer step of the exact guided path: the
// gradient agreement of each method with the exact λ (cosine, relative
// error), the Hilbert–Schmidt error of each approximate Fisher operator at
// the step's states, and the network's ε error there.
type GMMStep struct {
	Step          int
	T, Sigma      float64
	Cos, RelErr   map[string]MeanSE // by GMMMethods
	HS            map[string]MeanSE // ‖F − F_op‖_HS by operator method (vjp, df-ea (net), df-ea (exact ȳ))
	FisherHS      MeanSE            // ‖F‖_HS
	NetEpsRelErr  MeanSE            // ‖ε_θ − ε‖/‖ε‖ at the states
	GradNormExact MeanSE            // ‖λ*‖
}

// GMMReward is one sampler run to completion from the shared noises.
type GMMReward struct {
	Method     string
	Reward     MeanSE // −L(x₀)
	PerSample  time.Duration
	NearTarget float64 // fraction of samples whose nearest mean is one of the two the target lies between
	// LogProb is the mixture's exact log q(x₀) of the samples (at t_min):
	// whether guidance kept them on the data.
	LogProb MeanSE
}

// GMMResult is the result of RunGMM.
type GMMResult struct {
	Config     GMMConfig
	Schedule   string
	Between    [2]int // the components the target lies between
	TargetDist float64
	TrainLoss  float64
	TrainTime  time.Duration
	Steps      []GMMStep
	Rewards    []GMMReward
	Elapsed    time.Duration
}

// trainGMMNet trains the ε-network (DSM) on data, v-parameterised with
// v weighting: with ε-prediction, DDIM's first VP steps (α(1) ≈ 0.007)
// amplify the network's ε error by σ/α and the samplers diverge; with
// v-prediction ε = α v + σ x (VP) is accurate where α is small.
func trainGMMNet(ctx context.Context, cfg GMMConfig, s schedule.Schedule, data [][]float64) (*access.Net, float64, error) {
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamWidth: cfg.Width, models.ParamDepth: cfg.Depth,
		models.ParamCosineSteps: cfg.TrainSteps, models.ParamSeed: int(cfg.Seed), models.ParamBatchSize: 128,
		models.ParamParam: "v", models.ParamWeighting: "v"})
	tr, err := models.NewTrainer(models.MustNewTrainBackend(), store, s, models.DSM, data, nil)
	if err != nil {
		return nil, 0, err
	}
	last, err := tr.Run(ctx, models.Loop{To: int64(cfg.TrainSteps)})
	if err != nil {
		return nil, 0, err
	}
	loss := last.Loss
	// No EMA: the cosine schedule ends at learning rate 0, and an EMA of
	// decay 0.999 over a few thousand steps still weighs the early weights
	// (it biased the MNIST t_θ; see mnist.Specs).
	net, err := models.NewAccessNet(models.MustNewBackend(), store, s, false)
	return net, loss, err
}

// gmmNames are the methods' names in the tables of this half.
var gmmNames = methodNames{Exact: GMMExact, VJP: GMMVJP, EANet: GMMEANet, EAExact: GMMEAExact}

// RunGMM draws the mixture (toys.GMM) and runs the study on it as a
// problem: it trains the network on draws of the problem's exact
// reference, follows the exact guided path scoring every method's λ and
// operator at its guided states, then runs every sampler to completion
// from the same noises.
func RunGMM(ctx context.Context, cfg GMMConfig) (*GMMResult, error) {
	start := time.Now()
	if cfg.Dim < 1 || cfg.Components < 2 || cfg.TrainSamples < 1 || cfg.TrainSteps < 1 || cfg.Seeds < 1 || cfg.From >= cfg.To {
		return nil, fmt.Errorf("adjoint: gmm config needs Dim ≥ 1, Components ≥ 2, positive TrainSamples, TrainSteps, Seeds and a guidance window: %+v", cfg)
	}
	s, err := schedule.ByName("vp", schedule.Params{})
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 29))
	gmm, err := toys.NewGMM(cfg.Dim, cfg.Components, rng)
	if err != nil {
		return nil, err
	}
	p := gmm.Problem(fmt.Sprintf("gmm-%d", cfg.Dim), s)
	mix, err := p.Exact(ctx)
	if err != nil {
		return nil, err
	}
	res := &GMMResult{Config: cfg, Schedule: p.Schedule.Name(), Between: gmm.Between,
		TargetDist: floats.Distance(gmm.Means.RawRowView(0), gmm.Means.RawRowView(1), 2)}
	t0 := time.Now()
	net, loss, err := trainGMMNet(ctx, cfg, p.Schedule, gmm.Sample(cfg.TrainSamples, rng))
	if err != nil {
		return nil, err
	}
	res.TrainTime, res.TrainLoss = time.Since(t0), loss
	var vjp score.FisherOperator
	if net != nil {
		if vjp, err = access.NewVJPMatVec(net); err != nil {
			return nil, err
		}
	}
	guides := operatorGuides(p.Schedule, mix, net, vjp, dfxadjoint.SquaredDistance(gmm.Target), gmmNames)
	xT := schedule.SamplePrior(schedule.Prior(p.Schedule), cfg.Seeds, p.Dim, rng)
	scfg := dfxadjoint.Config{Steps: cfg.OuterSteps, From: cfg.From, To: cfg.To, InnerSteps: cfg.InnerSteps, Strength: cfg.Strength, Normalize: cfg.Normalize}
	states, _, err := guidedPath(ctx, guides[GMMExact], xT, scfg)
	if err != nil {
		return nil, err
	}
	for _, st := range states {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row, err := scoreState(mix, net, guides, st, cfg.InnerSteps)
		if err != nil {
			return nil, err
		}
		res.Steps = append(res.Steps, *row)
	}
	if res.Rewards, err = gmmRewards(ctx, mix, gmm.NearTarget, net, guides, xT, scfg); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// pathState is a guided outer step's state before its update.
type pathState struct {
	Step int
	At   schedule.Coefficients
	X    *mat.Dense
}

// guidedPath runs g.Sample and returns the state at each guided outer
// step, before the step's guidance update (dfxadjoint.Config.Observe), and the
// final samples.
func guidedPath(ctx context.Context, g dfxadjoint.Guide, xT *mat.Dense, cfg dfxadjoint.Config) ([]pathState, *mat.Dense, error) {
	var out []pathState
	cfg.Observe = func(k int, at schedule.Coefficients, x *mat.Dense, _ *dfxadjoint.GradientResult) error {
		out = append(out, pathState{Step: k, At: at, X: mat.DenseCopyOf(x)})
		return nil
	}
	res, err := g.Sample(ctx, xT, cfg)
	if err != nil {
		return nil, nil, err
	}
	return out, res.X, nil
}

// gmmRewards runs every sampler to completion from xT.
// near is the fraction of samples near the target (toys.GMM.NearTarget).
func gmmRewards(ctx context.Context, mix mixture.Mixture, near func(*mat.Dense) float64, net *access.Net, guides map[string]dfxadjoint.Guide,
	xT *mat.Dense, scfg dfxadjoint.Config) ([]GMMReward, error) {
	loss := guides[GMMExact].Loss
	b, _ := xT.Dims()
	var out []GMMReward
	run := func(name string, g dfxadjoint.Guide, cfg dfxadjoint.Config) error {
		r, err := g.Sample(ctx, xT, cfg)
		if err != nil {
			return fmt.Errorf("adjoint: gmm %s: %w", name, err)
		}
		l, _, err := loss(r.X)
		if err != nil {
			return err
		}
		floats.Scale(-1, l)
		lo, _ := g.Schedule.Interval()
		c, err := schedule.At(g.Schedule, lo)
		if err != nil {
			return err
		}
		lp, err := mix.Eval(mixture.Query{At: c, X: r.X, Want: mixture.LogProb})
		if err != nil {
			return err
		}
		out = append(out, GMMReward{Method: name, Reward: stats.EstimateOf(l), PerSample: r.Elapsed / time.Duration(b),
			NearTarget: near(r.X), LogProb: stats.EstimateOf(lp.LogProb)})
		return nil
	}
	plain := scfg
	plain.From, plain.To = 0, 0
	if err := run(GMMUnguided, guides[GMMExact], plain); err != nil {
		return nil, err
	}
	if net != nil {
		if err := run(GMMUnguidedN, guides[GMMVJP], plain); err != nil {
			return nil, err
		}
	}
	for _, m := range GMMMethods {
		if g, ok := guides[m]; ok {
			if err := run(m, g, scfg); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// gmmVJPSeeds is the number of seeds (the first ones) at which the VJP
// operator's d×d matrix is built: d VJP products per state, and the Go
// backend's scalar exp in SiLU makes them the study's main cost.
const gmmVJPSeeds = 16

// scoreState computes, at one state of the exact guided path, every
// method's λ against a separately computed exact λ*, the operators'
// Hilbert–Schmidt errors against the exact Fisher and the network's ε error.
func scoreState(mix mixture.Mixture, net *access.Net, guides map[string]dfxadjoint.Guide, st pathState, inner int) (*GMMStep, error) {
	b, d := st.X.Dims()
	row := &GMMStep{Step: st.Step, T: st.At.T, Sigma: st.At.Sigma,
		Cos: map[string]MeanSE{}, RelErr: map[string]MeanSE{}, HS: map[string]MeanSE{}}
	ref, err := guides[GMMExact].Gradient(st.X, st.At.T, inner)
	if err != nil {
		return nil, err
	}
	grads := map[string]*dfxadjoint.GradientResult{}
	for _, m := range GMMMethods {
		g, ok := guides[m]
		if !ok {
			continue
		}
		gr, err := g.Gradient(st.X, st.At.T, inner)
		if err != nil {
			return nil, fmt.Errorf("adjoint: gmm %s at t = %g: %w", m, st.At.T, err)
		}
		grads[m] = gr
		cs, rs := make([]float64, b), make([]float64, b)
		for i := range b {
			cs[i] = cosine(gr.Grad.RawRowView(i), ref.Grad.RawRowView(i))
			rs[i] = stats.RelNorm(gr.Grad.RawRowView(i), ref.Grad.RawRowView(i))
		}
		row.Cos[m], row.RelErr[m] = stats.EstimateOf(cs), stats.EstimateOf(rs)
	}
	gn := make([]float64, b)
	for i := range b {
		gn[i] = floats.Norm(ref.Grad.RawRowView(i), 2)
	}
	row.GradNormExact = stats.EstimateOf(gn)

	ex, err := mix.Eval(mixture.Query{At: st.At, X: st.X, Want: mixture.Full | mixture.Score})
	if err != nil {
		return nil, err
	}
	fn := make([]float64, b)
	for i := range b {
		fn[i] = hsNorm(ex.Fisher[i])
	}
	row.FisherHS = stats.EstimateOf(fn)
	for _, m := range []string{GMMEANet, GMMEAExact} {
		gr, ok := grads[m]
		if !ok {
			continue
		}
		ybar, x0 := gr.Trajectory.Denoisers[0], gr.Trajectory.Endpoint()
		hs := make([]float64, b)
		for i := range b {
			hs[i] = hsErrorEA(ex.Fisher[i], x0.RawRowView(i), ybar.RawRowView(i), st.At)
		}
		row.HS[m] = stats.EstimateOf(hs)
	}
	if g, ok := guides[GMMVJP]; ok {
		nb := min(b, gmmVJPSeeds)
		cols, err := access.OperatorMatrix(g.Operator, score.State{At: st.At, X: st.X.Slice(0, nb, 0, d).(*mat.Dense)})
		if err != nil {
			return nil, err
		}
		hs := make([]float64, nb)
		for i := range nb {
			hs[i] = hsErrorDense(ex.Fisher[i], cols[i])
		}
		row.HS[GMMVJP] = stats.EstimateOf(hs)
	}
	if net != nil {
		eps, err := net.EpsAt(st.At, st.X)
		if err != nil {
			return nil, err
		}
		var want mat.Dense
		score.EpsFromScore(&want, st.At, ex.Score) // the exact ε = −σ ∇log q
		er := make([]float64, b)
		for i := range b {
			er[i] = stats.RelNorm(eps.RawRowView(i), want.RawRowView(i))
		}
		row.NetEpsRelErr = stats.EstimateOf(er)
	}
	return row, nil
}

// hsNorm is ‖F‖_HS.
func hsNorm(f *mat.SymDense) float64 {
	d := f.SymmetricDim()
	var s float64
	for i := range d {
		for j := range d {
			s += f.At(i, j) * f.At(i, j)
		}
	}
	return math.Sqrt(s)
}

// hsErrorEA is ‖F − F_EA‖_HS with F_EA = access.DFEAMatrix, the matrix
// that DF-EA (eq. EA_approx) applies (symmetric, so its rows are its
// columns).
func hsErrorEA(f *mat.SymDense, x0, ybar []float64, c schedule.Coefficients) float64 {
	return hsErrorDense(f, access.DFEAMatrix(c, x0, ybar))
}

// hsErrorDense is ‖F − A‖_HS for A given by its columns.
func hsErrorDense(f *mat.SymDense, cols *mat.Dense) float64 {
	d := f.SymmetricDim()
	var s float64
	for j := range d {
		for i := range d {
			e := f.At(i, j) - cols.At(j, i)
			s += e * e
		}
	}
	return math.Sqrt(s)
}
