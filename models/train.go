package models

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Objective selects what a Trainer fits.
type Objective int

const (
	// DSM is denoising score matching (paper eq. dpm_objective) in the
	// context's parameterisation and weighting.
	DSM Objective = iota
	// DFTM fits the DF-TM network t_θ(x_t,t) to ‖x₀‖²/d (paper Algorithm tnet).
	DFTM
	// DFTMCentred (ours, beyond the paper) fits the centred DF-TM network
	// ν_θ(x_t,t) to ‖ε̂_θ − ε‖²/d = (α²/σ²)‖x₀ − ȳ_θ‖²/d, with ε̂_θ (ȳ_θ) from
	// the frozen, already trained score network in the same context. Its
	// optimum is (α²/σ²)(tr Cov[x₀|x_t] + ‖ȳ − ȳ_θ‖²)/d, and
	// tr F ≈ (d/σ²)(1 − ν_θ) without DF-TM's α²/σ⁴ cancellation.
	DFTMCentred
)

// Trainer runs optimisation steps for one objective on an in-memory data set.
// Host code samples everything random (rows, t, ε, class dropout) from one
// PCG stream seeded by ParamSeed, so a fixed seed gives identical weights and
// a checkpoint (which stores the stream's state) resumes exactly.
type Trainer struct {
	Backend   backends.Backend
	Ctx       *context.Context
	Schedule  schedule.Schedule
	Objective Objective

	data   []float64 // [N*d] row-major
	labels []int32   // [N] or nil
	n, d   int
	dtype  dtypes.DType
	pcg    *rand.PCG
	rng    *rand.Rand
	step   int64
	exec   *context.Exec
}

// NewTrainer checks data ([N][d] rows, labels nil or one per row in
// [0, num_classes)) and the hyperparameters, seeds the weights and the
// sampling stream, and returns a trainer at step 0.
func NewTrainer(backend backends.Backend, ctx *context.Context, s schedule.Schedule, obj Objective, data [][]float64, labels []int) (*Trainer, error) {
	if len(data) == 0 || len(data[0]) == 0 {
		return nil, errors.New("models: empty training data")
	}
	if err := schedule.Validate(s); err != nil {
		return nil, err
	}
	dtype, err := DTypeOf(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := ParseParameterisation(context.GetParamOr(ctx, ParamParam, "eps")); err != nil {
		return nil, err
	}
	if _, err := dsmWeight(context.GetParamOr(ctx, ParamWeighting, "eps"), 1, 1, 5); err != nil {
		return nil, err
	}
	if ts := context.GetParamOr(ctx, ParamTimeSampling, "uniform"); ts != "uniform" && ts != "log-sigma" {
		return nil, fmt.Errorf("models: time_sampling %q, want uniform or log-sigma", ts)
	}
	if obj == DFTMCentred {
		if err := freezeScoreNetwork(ctx); err != nil {
			return nil, err
		}
	}
	tr := &Trainer{Backend: backend, Ctx: ctx, Schedule: s, Objective: obj, n: len(data), d: len(data[0]), dtype: dtype}
	tr.data = make([]float64, 0, tr.n*tr.d)
	for i, row := range data {
		if len(row) != tr.d {
			return nil, fmt.Errorf("models: data row %d has dim %d, row 0 has %d", i, len(row), tr.d)
		}
		tr.data = append(tr.data, row...)
	}
	k := context.GetParamOr(ctx, ParamNumClasses, 0)
	if labels != nil {
		if len(labels) != tr.n {
			return nil, fmt.Errorf("models: %d labels for %d rows", len(labels), tr.n)
		}
		for i, l := range labels {
			if l < 0 || l >= k {
				return nil, fmt.Errorf("models: label %d of row %d outside [0, %d) (num_classes)", l, i, k)
			}
			tr.labels = append(tr.labels, int32(l))
		}
	}
	seed := uint64(context.GetParamOr(ctx, ParamSeed, 1))
	tr.pcg = rand.NewPCG(seed, 0x9e3779b97f4a7c15)
	tr.rng = rand.New(tr.pcg)
	if err := ctx.SetRNGStateFromSeed(int64(seed)); err != nil { // weight initialisation
		return nil, err
	}
	tr.exec, err = context.NewExec(backend, ctx, tr.stepGraph)
	if err != nil {
		return nil, err
	}
	return tr, nil
}

// freezeScoreNetwork marks the score network's variables in ctx
// non-trainable (the centred DF-TM target uses it without updating it); a
// context without them is an error.
func freezeScoreNetwork(ctx *context.Context) error {
	found := false
	for v := range ctx.IterVariables() {
		if HasScope(v.Scope(), ScoreScope) {
			v.SetTrainable(false)
			found = true
		}
	}
	if !found {
		return errors.New("models: the centred DF-TM objective needs a trained score network in the context (scope " + ScoreScope + ")")
	}
	return nil
}

// Step returns the number of optimisation steps taken.
func (tr *Trainer) Step() int64 { return tr.step }

// dsmWeight is the per-sample weight of the ε-space squared error that gives
// the named weighting: "eps" 1; "y" ‖ŷ−y‖² = σ²/α² ‖ε̂−ε‖²; "v"
// ‖v̂−v‖² = (α²+σ²)²/α² ‖ε̂−ε‖²; "min-snr" min(SNR, γ)/SNR with SNR = α²/σ².
func dsmWeight(name string, alpha, sigma, gamma float64) (float64, error) {
	switch name {
	case "eps":
		return 1, nil
	case "y", "x0":
		return sigma * sigma / (alpha * alpha), nil
	case "v":
		s := alpha*alpha + sigma*sigma
		return s * s / (alpha * alpha), nil
	case "min-snr":
		snr := alpha * alpha / (sigma * sigma)
		return math.Min(snr, gamma) / snr, nil
	}
	return 0, fmt.Errorf("models: weighting %q, want eps, y, v or min-snr", name)
}

// LearningRate is the scheduled rate after `step` steps: linear warm-up,
// then cosine decay to zero over ParamCosineSteps (0: constant).
func LearningRate(ctx *context.Context, step int64) float64 {
	lr := context.GetParamOr(ctx, ParamLearningRate, 1e-3)
	warm := int64(context.GetParamOr(ctx, ParamWarmupSteps, 0))
	cos := int64(context.GetParamOr(ctx, ParamCosineSteps, 0))
	if warm > 0 && step < warm {
		return lr * float64(step+1) / float64(warm)
	}
	if cos > 0 {
		frac := math.Min(1, float64(step-warm)/float64(cos))
		return lr * 0.5 * (1 + math.Cos(math.Pi*frac))
	}
	return lr
}

// batch samples one batch on the host.
func (tr *Trainer) batch() []any {
	bs := context.GetParamOr(tr.Ctx, ParamBatchSize, 256)
	tMin, tMax := tr.Schedule.Interval()
	weighting := context.GetParamOr(tr.Ctx, ParamWeighting, "eps")
	gamma := context.GetParamOr(tr.Ctx, ParamMinSNRGamma, 5.0)
	k := context.GetParamOr(tr.Ctx, ParamNumClasses, 0)
	drop := context.GetParamOr(tr.Ctx, ParamCFGDropout, 0.1)
	x0 := make([]float64, bs*tr.d)
	eps := make([]float64, bs*tr.d)
	alpha, sigma, weight := make([]float64, bs), make([]float64, bs), make([]float64, bs)
	class := make([]int32, bs)
	for b := range bs {
		i := tr.rng.IntN(tr.n)
		copy(x0[b*tr.d:], tr.data[i*tr.d:(i+1)*tr.d])
		for j := range tr.d {
			eps[b*tr.d+j] = tr.rng.NormFloat64()
		}
		t := tr.sampleTime(tMin, tMax)
		alpha[b], sigma[b] = tr.Schedule.Alpha(t), tr.Schedule.Sigma(t)
		weight[b], _ = dsmWeight(weighting, alpha[b], sigma[b], gamma)
		class[b] = int32(k)
		if tr.labels != nil && tr.rng.Float64() >= drop {
			class[b] = tr.labels[i]
		}
	}
	lr := []float64{LearningRate(tr.Ctx, tr.step)}
	return []any{
		tr.tensor(x0, bs, tr.d), tr.tensor(eps, bs, tr.d), tr.tensor(alpha, bs), tr.tensor(sigma, bs),
		tr.tensor(weight, bs), tensors.FromFlatDataAndDimensions(class, bs), tr.tensor(lr),
	}
}

// sampleTime draws t uniformly, or with log σ(t) uniform on [log σ(tMin), log σ(tMax)].
func (tr *Trainer) sampleTime(tMin, tMax float64) float64 {
	u := tr.rng.Float64()
	if context.GetParamOr(tr.Ctx, ParamTimeSampling, "uniform") != "log-sigma" {
		return tMin + (tMax-tMin)*u
	}
	lo, hi := math.Log(tr.Schedule.Sigma(tMin)), math.Log(tr.Schedule.Sigma(tMax))
	t, err := schedule.SigmaInverse(tr.Schedule, math.Exp(lo+(hi-lo)*u), tMin, tMax)
	if err != nil { // only at the ends, by rounding
		return tMin + (tMax-tMin)*u
	}
	return t
}

// tensor converts float64 host data to the trainer's dtype (scalar when no dims).
func (tr *Trainer) tensor(v []float64, dims ...int) *tensors.Tensor {
	if tr.dtype == dtypes.Float64 {
		return tensors.FromFlatDataAndDimensions(append([]float64(nil), v...), dims...)
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensors.FromFlatDataAndDimensions(f, dims...)
}

// TrainSteps runs n optimisation steps and returns the last batch loss.
func (tr *Trainer) TrainSteps(n int) (loss float64, err error) {
	for range n {
		var out []*tensors.Tensor
		out, err = tr.exec.Exec(tr.batch()...)
		if err != nil {
			return math.NaN(), fmt.Errorf("models: training step %d: %w", tr.step+1, err)
		}
		loss = toFloat64(out[0])
		tr.step++
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return loss, fmt.Errorf("models: loss %g at step %d", loss, tr.step)
		}
	}
	return loss, nil
}

// Fit runs n steps, writing a progress line to log every `every` steps (and
// at the end): step, loss, learning rate and throughput. log may be nil.
func (tr *Trainer) Fit(n, every int, log io.Writer) (loss float64, err error) {
	every = max(every, 1)
	start, done := time.Now(), 0
	for done < n {
		k := min(every, n-done)
		if loss, err = tr.TrainSteps(k); err != nil {
			return loss, err
		}
		done += k
		if log != nil {
			rate := float64(done) / time.Since(start).Seconds()
			fmt.Fprintf(log, "step %d/%d  loss %.5g  lr %.3g  %.1f steps/s\n", tr.step, tr.step-int64(done)+int64(n), loss, LearningRate(tr.Ctx, tr.step), rate)
		}
	}
	return loss, nil
}

func toFloat64(t *tensors.Tensor) float64 {
	switch v := t.Value().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	panic(fmt.Sprintf("models: unexpected loss type %s", t.Shape()))
}

// stepGraph builds one optimisation step: loss, gradients, global-norm
// clipping, Adam/AdamW update with the host-scheduled learning rate, EMA.
func (tr *Trainer) stepGraph(ctx *context.Context, args []*graph.Node) *graph.Node {
	x0, eps, alpha, sigma, weight, class, lr := args[0], args[1], args[2], args[3], args[4], args[5], args[6]
	ctx = ctx.Checked(false)
	in := Inputs{Alpha: alpha, Sigma: sigma, Class: class}
	a2, s2 := graph.InsertAxes(alpha, -1), graph.InsertAxes(sigma, -1)
	in.X = graph.Add(graph.Mul(a2, x0), graph.Mul(s2, eps)) // x_t = α x₀ + σ ε
	var perSample *graph.Node
	switch tr.Objective {
	case DSM:
		perSample = graph.ReduceMean(graph.Square(graph.Sub(Eps(ctx, in), eps)), -1)
		perSample = graph.Mul(perSample, weight)
	case DFTM:
		target := graph.DivScalar(graph.ReduceSum(graph.Square(x0), -1), float64(tr.d))
		perSample = graph.Square(graph.Sub(TraceNet(ctx, in), target))
	case DFTMCentred:
		// x₀ − ȳ_θ = (σ/α)(ε̂_θ − ε), so the target (α²/σ²)‖x₀ − ȳ_θ‖²/d is
		// the per-sample DSM error of the frozen score network.
		target := graph.ReduceMean(graph.Square(graph.Sub(graph.StopGradient(Eps(ctx, in)), eps)), -1)
		perSample = graph.Square(graph.Sub(CentredTraceNet(ctx, in), target))
	}
	loss := graph.ReduceAllMean(perSample)

	grads := ctx.BuildTrainableVariablesGradientsGraph(loss)
	if c := context.GetParamOr(ctx, ParamClipNorm, 1.0); c > 0 {
		var sq *graph.Node
		for _, g := range grads {
			s := graph.ReduceAllSum(graph.Square(g))
			if sq == nil {
				sq = s
			} else {
				sq = graph.Add(sq, s)
			}
		}
		norm := graph.Sqrt(sq)
		scale := graph.Min(graph.OnesLike(norm), graph.Div(graph.Scalar(loss.Graph(), loss.DType(), c), graph.AddScalar(norm, 1e-12)))
		for i := range grads {
			grads[i] = graph.Mul(grads[i], scale)
		}
	}
	optimizers.LearningRateVar(ctx, loss.DType(), 0).SetValueGraph(lr)
	opt := optimizers.Adam().WeightDecay(context.GetParamOr(ctx, ParamWeightDecay, 0.0)).Done()
	opt.(interface {
		UpdateGraphWithGradients(*context.Context, []*graph.Node, dtypes.DType)
	}).UpdateGraphWithGradients(ctx, grads, loss.DType())
	tr.emaGraph(ctx, loss.Graph())
	return loss
}

// EMAScope holds the exponential moving averages of the trainable variables,
// under the same relative scope and names.
const EMAScope = "/ema"

// emaGraph updates ema ← d·ema + (1−d)·w after the optimiser step; at the
// first step ema = w.
func (tr *Trainer) emaGraph(ctx *context.Context, g *graph.Graph) {
	decay := context.GetParamOr(ctx, ParamEMADecay, 0.999)
	if decay <= 0 {
		return
	}
	step := optimizers.GetGlobalStepVar(ctx).ValueGraph(g)
	first := graph.Equal(step, graph.OnesLike(step))
	for v := range ctx.IterVariables() {
		if !v.Trainable || !v.InUseByGraph(g) {
			continue
		}
		w := v.ValueGraph(g)
		ev := ctx.InAbsPath(EMAScope+v.Scope()).Checked(false).
			VariableWithShape(v.Name(), v.Shape()).SetTrainable(false)
		old := ev.ValueGraph(g)
		upd := graph.Add(graph.MulScalar(old, decay), graph.MulScalar(w, 1-decay))
		ev.SetValueGraph(graph.Where(graph.BroadcastToShape(first, shapes.Make(dtypes.Bool, w.Shape().Dimensions...)), w, upd))
	}
}

// EMAContext returns a copy of ctx whose trainable variables hold their EMA
// values, for evaluation; ctx itself is unchanged. Without EMA variables it
// returns a plain copy.
func EMAContext(ctx *context.Context) (*context.Context, error) {
	c, err := ctx.Clone()
	if err != nil {
		return nil, err
	}
	for v := range c.IterVariables() {
		if !v.Trainable {
			continue
		}
		ev := c.InspectVariable(EMAScope+v.Scope(), v.Name())
		if ev == nil || !ev.HasValue() {
			continue
		}
		val, err := ev.Value()
		if err != nil {
			return nil, err
		}
		clone, err := val.LocalClone()
		if err != nil {
			return nil, err
		}
		if err := v.SetValue(clone); err != nil {
			return nil, err
		}
	}
	return c, nil
}
