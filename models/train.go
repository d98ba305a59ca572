package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/support/exceptions"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// Objective selects what a Trainer fits.
type Objective int

const (
	// DSM is denoising score matching (paper eq. dpm_objective) in the
	// store's parameterisation and weighting.
	DSM Objective = iota
	// DFTM fits the DF-TM network t_θ(x_t,t) to ‖x₀‖²/d (paper Algorithm tnet).
	DFTM
	// DFTMCentred (ours, beyond the paper) fits the centred DF-TM network
	// ν_θ(x_t,t) to ‖ε̂_θ − ε‖²/d = (α²/σ²)‖x₀ − ȳ_θ‖²/d, with ε̂_θ (ȳ_θ) from
	// the frozen, already trained score network in the same store. Its
	// optimum is (α²/σ²)(tr Cov[x₀|x_t] + ‖ȳ − ȳ_θ‖²)/d, and
	// tr F ≈ (d/σ²)(1 − ν_θ) without DF-TM's α²/σ⁴ cancellation.
	DFTMCentred
	// Classify fits the clean-image classifier (ClassifierNet) by
	// cross-entropy on the labels, with random translations of up to
	// ParamShiftAugment pixels.
	Classify
)

var objectiveNames = []string{"dsm", "df-tm", "df-tm-c", "classifier"}

// String is the objective's name as checkpoints record it.
func (o Objective) String() string {
	if o >= 0 && int(o) < len(objectiveNames) {
		return objectiveNames[o]
	}
	return fmt.Sprintf("objective(%d)", int(o))
}

// ParseObjective is the inverse of Objective.String.
func ParseObjective(s string) (Objective, error) {
	for i, n := range objectiveNames {
		if n == s {
			return Objective(i), nil
		}
	}
	return 0, fmt.Errorf("models: objective %q, want dsm, df-tm, df-tm-c or classifier", s)
}

// Trainer fits one objective on an in-memory data set with GoMLX's
// train.Trainer (one compiled step: loss, gradients, global-norm clipping,
// Adam/AdamW with the host-scheduled learning rate, EMA) driven by
// train.Loop (Fit) or step by step (TrainSteps).
//
// Host code samples everything random (rows, t, ε, class dropout) from one
// PCG stream seeded by ParamSeed, and the weights are initialised from the
// same seed, so a fixed seed gives identical weights; a checkpoint (which
// stores the stream's state with every variable) resumes exactly.
type Trainer struct {
	Backend   compute.Backend
	Store     *model.Store
	Schedule  schedule.Schedule
	Objective Objective
	// GoMLX is the underlying GoMLX trainer (one executable per batch shape).
	GoMLX *train.Trainer
	// Config is the caller's record (e.g. a loss curve so far): a saved
	// state holds it and Resume restores it.
	Config []byte

	data   []float64 // [N*d] row-major
	labels []int32   // [N] or nil
	n, d   int
	dtype  dtypes.DType
	pcg    *rand.PCG
	rng    *rand.Rand
	step   int64     // steps taken (equals the store's global step)
	host   *hostStep // the optimiser on the host (Go backend); nil: GoMLX's trainer
}

// NewTrainer checks data ([N][d] rows, labels nil or one per row in
// [0, num_classes)) and the hyperparameters in store, seeds the weights and
// the sampling stream, and returns a trainer at step 0.
func NewTrainer(backend compute.Backend, store *model.Store, s schedule.Schedule, obj Objective, data [][]float64, labels []int) (*Trainer, error) {
	if len(data) == 0 || len(data[0]) == 0 {
		return nil, errors.New("models: empty training data")
	}
	if err := schedule.Validate(s); err != nil {
		return nil, err
	}
	if obj < DSM || obj > Classify {
		return nil, fmt.Errorf("models: unknown objective %d", int(obj))
	}
	dtype, err := DTypeOf(store)
	if err != nil {
		return nil, err
	}
	if err := prepareStore(store, obj); err != nil {
		return nil, err
	}
	tr := &Trainer{Backend: backend, Store: store, Schedule: s, Objective: obj, n: len(data), d: len(data[0]), dtype: dtype}
	if tr.data, err = flattenData(data); err != nil {
		return nil, err
	}
	if tr.labels, err = checkLabels(store, obj, labels, tr.n, tr.d); err != nil {
		return nil, err
	}
	seed := uint64(model.GetRootParamOr(store, ParamSeed, 1))
	tr.pcg = rand.NewPCG(seed, 0x9e3779b97f4a7c15)
	tr.rng = rand.New(tr.pcg)
	if err := store.SetRNGStateFromSeed(int64(seed)); err != nil { // weight initialisation
		return nil, err
	}
	opt := &clippedAdamEMA{
		adam:     adamOf(store),
		clipNorm: model.GetRootParamOr(store, ParamClipNorm, 1.0),
		emaDecay: model.GetRootParamOr(store, ParamEMADecay, 0.999),
	}
	if useHostOptimizer(backend) {
		if tr.host, err = newHostStep(tr, opt); err != nil {
			return nil, err
		}
	}
	err = exceptions.TryCatch[error](func() {
		tr.GoMLX = train.NewTrainer(backend, store, tr.graphStepLoss, meanLoss, opt, nil, nil)
	})
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return tr, nil
}

// prepareStore checks the store's parameters and freezes what the
// objective does not train: a mixture skip (fitted, never trained) and,
// for DF-TM-c, the score network.
func prepareStore(store *model.Store, obj Objective) error {
	if err := checkParams(store); err != nil {
		return err
	}
	if err := CheckMixtureSkip(store); err != nil {
		return err
	}
	for v := range store.IterVariables() { // a mixture skip is fitted, never trained
		if HasScope(v.Scope(), MixtureScope) {
			v.SetTrainable(false)
		}
	}
	if obj == DFTMCentred {
		return freezeScoreNetwork(store)
	}
	return nil
}

// flattenData is the rows of data, all of row 0's length and finite, one
// after the other.
func flattenData(data [][]float64) ([]float64, error) {
	n, d := len(data), len(data[0])
	out := make([]float64, 0, n*d)
	for i, row := range data {
		if len(row) != d {
			return nil, fmt.Errorf("models: data row %d has dim %d, row 0 has %d", i, len(row), d)
		}
		for j, x := range row {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("models: data row %d, column %d is %g", i, j, x)
			}
		}
		out = append(out, row...)
	}
	return out, nil
}

// checkLabels checks the labels (one per row, in [0, num_classes); needed
// by the classifier, with a shift augmentation that fits square images of
// dimension d) and returns them as int32 (nil without labels).
func checkLabels(store *model.Store, obj Objective, labels []int, n, d int) ([]int32, error) {
	k := model.GetRootParamOr(store, ParamNumClasses, 0)
	if obj == Classify {
		if labels == nil || k < 2 {
			return nil, fmt.Errorf("models: the classifier needs labels and num_classes ≥ 2 (have %d)", k)
		}
		if sh := model.GetRootParamOr(store, ParamShiftAugment, 0); sh != 0 {
			side := int(math.Round(math.Sqrt(float64(d))))
			if side*side != d || sh < 0 || sh >= side {
				return nil, fmt.Errorf("models: shift_augment %d needs square images and 0 ≤ shift < side (d = %d)", sh, d)
			}
		}
	}
	if labels == nil {
		return nil, nil
	}
	if len(labels) != n {
		return nil, fmt.Errorf("models: %d labels for %d rows", len(labels), n)
	}
	out := make([]int32, 0, n)
	for i, l := range labels {
		if l < 0 || l >= k {
			return nil, fmt.Errorf("models: label %d of row %d outside [0, %d) (num_classes)", l, i, k)
		}
		out = append(out, int32(l))
	}
	return out, nil
}

// checkParams validates the hyperparameters that are parsed by name.
func checkParams(store *model.Store) error {
	if _, err := ParseParameterisation(model.GetRootParamOr(store, ParamParam, "eps")); err != nil {
		return err
	}
	if _, err := dsmWeight(model.GetRootParamOr(store, ParamWeighting, "eps"), 1, 1, 5); err != nil {
		return err
	}
	if ts := model.GetRootParamOr(store, ParamTimeSampling, "uniform"); ts != "uniform" && ts != "log-sigma" && ts != "log-snr" {
		return fmt.Errorf("models: time_sampling %q, want uniform, log-sigma or log-snr", ts)
	}
	if bs := model.GetRootParamOr(store, ParamBatchSize, 256); bs < 1 {
		return fmt.Errorf("models: batch_size %d, want ≥ 1", bs)
	}
	if l := model.GetRootParamOr(store, ParamWeightLayout, LayoutInOut); l != LayoutInOut && l != LayoutOutIn {
		return fmt.Errorf("models: weight_layout %q, want %s or %s", l, LayoutOutIn, LayoutInOut)
	}
	if a := model.GetRootParamOr(store, ParamArch, ArchMLP); !validArch(a) {
		return fmt.Errorf("models: arch %q, want %s or %s", a, ArchMLP, ArchFiLM)
	}
	if s := model.GetRootParamOr(store, ParamSkip, SkipNone); s != SkipNone && s != SkipMixture {
		return fmt.Errorf("models: skip %q, want %s or %s", s, SkipNone, SkipMixture)
	} else if net := store.RootScope().At(ScoreScope); s == SkipMixture && model.GetParamOr(net, ParamParam, "eps") != "eps" {
		return fmt.Errorf("models: a mixture skip needs the score network's parameterisation eps, have %q", model.GetParamOr(net, ParamParam, "eps"))
	}
	if a := model.GetParamOr(store.RootScope().At(ScoreScope), ParamArch, ArchMLP); !validArch(a) {
		return fmt.Errorf("models: arch %q, want %s or %s", a, ArchMLP, ArchFiLM)
	}
	if q := model.GetRootParamOr(store, ParamDequantize, 0.0); math.IsNaN(q) || q < 0 || q > 1 {
		return fmt.Errorf("models: dequantize %g, want a level width in [0, 1]", q)
	}
	if a := model.GetRootParamOr(store, ParamActivation, "silu"); !validActivation(a) {
		return fmt.Errorf("models: activation %q, want silu, tanh, relu or softplus", a)
	}
	return nil
}

// freezeScoreNetwork marks the score network's variables non-trainable (the
// centred DF-TM target uses it without updating it); a store without them is
// an error.
func freezeScoreNetwork(store *model.Store) error {
	found := false
	for v := range store.IterVariables() {
		if HasScope(v.Scope(), ScoreScope) {
			v.SetTrainable(false)
			found = true
		}
	}
	if !found {
		return errors.New("models: the centred DF-TM objective needs a trained score network in the store (scope " + ScoreScope + ")")
	}
	return nil
}

// Step returns the number of optimisation steps taken.
func (tr *Trainer) Step() int64 { return tr.step }

// Dim is the data dimension d.
func (tr *Trainer) Dim() int { return tr.d }

// SamplingStream is the state of the stream that samples rows, t, ε and
// class dropout: with the store's variables, what a saved state needs to
// resume exactly.
func (tr *Trainer) SamplingStream() rand.PCG { return *tr.pcg }

// Resume puts the trainer in a saved state: restore sets the store's
// variables (its error is returned as is, before the step, stream and
// Config change; restore may have set some variables by then, so a caller
// checks the saved state whole before it calls Resume), then the trainer
// takes the step count, sampling stream and Config, and recompiles its
// step.
func (tr *Trainer) Resume(step int64, stream rand.PCG, config []byte, restore func(*model.Store) error) error {
	if err := restore(tr.Store); err != nil {
		return err
	}
	*tr.pcg = stream
	tr.step = step
	tr.Config = config
	tr.GoMLX.ResetComputationGraphs()
	if tr.host != nil {
		return tr.host.reset()
	}
	return nil
}

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
func LearningRate(store *model.Store, step int64) float64 {
	lr := model.GetRootParamOr(store, ParamLearningRate, 1e-3)
	warm := int64(model.GetRootParamOr(store, ParamWarmupSteps, 0))
	cos := int64(model.GetRootParamOr(store, ParamCosineSteps, 0))
	if warm > 0 && step < warm {
		return lr * float64(step+1) / float64(warm)
	}
	if cos > 0 {
		frac := math.Min(1, float64(step-warm)/float64(cos))
		return lr * 0.5 * (1 + math.Cos(math.Pi*frac))
	}
	return lr
}

// batch samples the next batch on the host: x₀, ε, α, σ, the DSM weight, the
// class (null class K under CFG dropout) and the learning rate of this step.
func (tr *Trainer) batch() []*tensors.Tensor {
	st := tr.Store
	bs := model.GetRootParamOr(st, ParamBatchSize, 256)
	tMin, tMax := tr.Schedule.Interval()
	weighting := model.GetRootParamOr(st, ParamWeighting, "eps")
	gamma := model.GetRootParamOr(st, ParamMinSNRGamma, 5.0)
	k := model.GetRootParamOr(st, ParamNumClasses, 0)
	drop := model.GetRootParamOr(st, ParamCFGDropout, 0.1)
	timeMode := model.GetRootParamOr(st, ParamTimeSampling, "uniform")
	deq := model.GetRootParamOr(st, ParamDequantize, 0.0)
	x0 := make([]float64, bs*tr.d)
	eps := make([]float64, bs*tr.d)
	alpha, sigma, weight := make([]float64, bs), make([]float64, bs), make([]float64, bs)
	class := make([]int32, bs)
	shift := 0
	side := 0
	if tr.Objective == Classify {
		drop = 0
		shift = model.GetRootParamOr(st, ParamShiftAugment, 0)
		side = int(math.Round(math.Sqrt(float64(tr.d))))
	}
	for b := range bs {
		i := tr.rng.IntN(tr.n)
		if shift > 0 {
			dy, dx := tr.rng.IntN(2*shift+1)-shift, tr.rng.IntN(2*shift+1)-shift
			src := tr.data[i*tr.d : (i+1)*tr.d]
			shiftImage(x0[b*tr.d:(b+1)*tr.d], src, side, dy, dx, src[0])
		} else {
			copy(x0[b*tr.d:], tr.data[i*tr.d:(i+1)*tr.d])
		}
		if deq > 0 { // uniform dequantisation: x₀ + U[0, level) per pixel
			row := x0[b*tr.d : (b+1)*tr.d]
			for j := range row {
				row[j] += deq * tr.rng.Float64()
			}
		}
		for j := range tr.d {
			eps[b*tr.d+j] = tr.rng.NormFloat64()
		}
		t := tr.sampleTime(tMin, tMax, timeMode)
		alpha[b], sigma[b] = tr.Schedule.Alpha(t), tr.Schedule.Sigma(t)
		weight[b], _ = dsmWeight(weighting, alpha[b], sigma[b], gamma)
		class[b] = int32(k)
		if tr.labels != nil && tr.rng.Float64() >= drop {
			class[b] = tr.labels[i]
		}
	}
	lr := []float64{LearningRate(st, tr.step)}
	return []*tensors.Tensor{
		tr.tensor(x0, bs, tr.d), tr.tensor(eps, bs, tr.d), tr.tensor(alpha, bs), tr.tensor(sigma, bs),
		tr.tensor(weight, bs), tensors.FromFlatDataAndDimensions(class, bs), tr.tensor(lr),
	}
}

// sampleTime draws t uniformly, with log σ(t) uniform on [log σ(tMin),
// log σ(tMax)] ("log-sigma"), or with the log signal-to-noise ratio
// log(α/σ) uniform ("log-snr"): for VP-type schedules dt ∝ −d log SNR is
// the importance sampling of the likelihood weighting g²/σ² (Song et al.
// 2021; Kingma et al. 2021), so equal ε-space weights then train on the
// likelihood bound itself.
func (tr *Trainer) sampleTime(tMin, tMax float64, mode string) float64 {
	u := tr.rng.Float64()
	switch mode {
	case "log-snr":
		lsnr := func(t float64) float64 { return math.Log(tr.Schedule.Sigma(t) / tr.Schedule.Alpha(t)) } // −½ log SNR, increasing
		target := lsnr(tMin) + (lsnr(tMax)-lsnr(tMin))*u
		lo, hi := tMin, tMax
		for i := 0; i < 100 && hi-lo > 1e-14; i++ {
			if mid := 0.5 * (lo + hi); lsnr(mid) < target {
				lo = mid
			} else {
				hi = mid
			}
		}
		return 0.5 * (lo + hi)
	case "log-sigma": // below
	default:
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
	return tensormat.FromFlat(tr.dtype, v, dims...)
}

// meanLoss reduces the per-sample losses the model function returns.
func meanLoss(_, predictions []*graph.Node) *graph.Node { return graph.ReduceAllMean(predictions[0]) }

// graphStepLoss is the model function of the GoMLX trainer: perSampleLoss,
// with the step's learning rate (the batch's last input) passed to the
// optimiser.
func (tr *Trainer) graphStepLoss(scope *model.Scope, inputs []*graph.Node) *graph.Node {
	lr := inputs[6]
	lrVar(scope, lr.DType()).SetNodeValue(lr)
	return tr.perSampleLoss(scope, inputs[:6])
}

// perSampleLoss builds, from the host-sampled batch (x₀, ε, α, σ, weight,
// class), x_t = α x₀ + σ ε and the per-sample loss of the objective.
func (tr *Trainer) perSampleLoss(scope *model.Scope, inputs []*graph.Node) *graph.Node {
	x0, eps, alpha, sigma, weight, class := inputs[0], inputs[1], inputs[2], inputs[3], inputs[4], inputs[5]
	in := Inputs{Alpha: alpha, Sigma: sigma, Class: class}
	a2, s2 := graph.InsertAxes(alpha, -1), graph.InsertAxes(sigma, -1)
	in.X = graph.Add(graph.Mul(a2, x0), graph.Mul(s2, eps)) // x_t = α x₀ + σ ε
	switch tr.Objective {
	case Classify:
		return classifierLoss(scope, x0, class)
	case DFTM:
		target := graph.DivScalar(graph.ReduceSum(graph.Square(x0), -1), float64(tr.d))
		return graph.Square(graph.Sub(TraceNet(scope, in), target))
	case DFTMCentred:
		// x₀ − ȳ_θ = (σ/α)(ε̂_θ − ε), so the target (α²/σ²)‖x₀ − ȳ_θ‖²/d is
		// the per-sample DSM error of the frozen score network.
		target := graph.ReduceMean(graph.Square(graph.Sub(graph.StopGradient(Eps(scope, in)), eps)), -1)
		return graph.Square(graph.Sub(CentredTraceNet(scope, in), target))
	default:
		return graph.Mul(graph.ReduceMean(graph.Square(graph.Sub(Eps(scope, in), eps)), -1), weight)
	}
}
