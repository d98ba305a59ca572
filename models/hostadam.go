package models

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/dfx-lab/dfx/models/internal/adam"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// hostStep is the training step on the Go backend: one compiled graph
// computes the loss and the gradient of every trainable variable, and the
// optimiser — global-norm clipping, Adam/AdamW and the EMA — runs on the host
// as one fused pass per variable over its flat storage (AVX-512 with
// GOEXPERIMENT=simd).
//
// Why: the same update written as graph ops (clippedAdamEMA) costs ≈ 15
// element-wise passes over every parameter, each a scalar loop of the Go
// backend (≈ 1 ns per element and pass): at 14 M parameters that was ≈ 350
// ms of a 730 ms step (figures/bench/PROFILE.md). The fused pass reads and
// writes each element once. On a backend whose element-wise ops are fast
// (XLA), the graph optimiser stays: moving the gradients to the host there
// would cost more than it saves.
//
// The formula is GoMLX's Adam's (optimizer.Adam: β₁ = 0.9, β₂ = 0.999,
// ε = 1e-7, debiasing by 1/(1−βᵗ), decoupled weight decay scaled by the
// learning rate, applied only for a positive decay), in the variables'
// dtype; the rounding differs slightly (the debiasing factors are computed
// in float64). The state lives in the same
// store variables (moments under /AdamOptimizer, the step counters, the
// EMA under /ema), so checkpoints are interchangeable with the graph path.
type hostStep struct {
	tr   *Trainer
	exec *model.Exec
	// vars are the trainable variables in the gradient order of the graph
	// (recorded when the graph is built); byPath orders them by path for the
	// norm's summation (as clippedAdamEMA does).
	vars   []*model.Variable
	byPath []int
	mu     sync.Mutex

	beta1, beta2, eps, weightDecay, clipNorm, emaDecay float64
}

// useHostOptimizer reports whether a trainer on backend takes its optimiser
// steps on the host: the Go backend (whose Name is "Go Backend" in compute
// v0.1.6; gobackend.BackendName is the registry name "go").
func useHostOptimizer(backend compute.Backend) bool {
	return backend.Name() == "Go Backend" || backend.Name() == gobackend.BackendName
}

func newHostStep(tr *Trainer, opt *clippedAdamEMA) (*hostStep, error) {
	h := &hostStep{
		tr: tr, beta1: 0.9, beta2: 0.999, eps: 1e-7,
		weightDecay: model.GetRootParamOr(tr.Store, ParamWeightDecay, 0.0),
		clipNorm:    opt.clipNorm, emaDecay: opt.emaDecay,
	}
	exec, err := model.NewExec(tr.Backend, tr.Store, h.graph)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	h.exec = exec
	return h, nil
}

// graph is the step's computation: the mean loss and the gradients.
func (h *hostStep) graph(scope *model.Scope, inputs []*graph.Node) []*graph.Node {
	g := inputs[0].Graph()
	scope.Store().SetTraining(g, true)
	loss := graph.ReduceAllMean(h.tr.perSampleLoss(scope, inputs[:6]))
	var vars []*model.Variable
	for v := range scope.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			vars = append(vars, v)
		}
	}
	grads := scope.BuildTrainableVariablesGradientsGraph(loss)
	if len(grads) != len(vars) {
		panic(fmt.Sprintf("models: %d gradients for %d trainable variables", len(grads), len(vars)))
	}
	h.mu.Lock()
	h.vars = vars
	h.byPath = make([]int, len(vars))
	for i := range h.byPath {
		h.byPath[i] = i
	}
	sort.Slice(h.byPath, func(a, b int) bool { return vars[h.byPath[a]].Path() < vars[h.byPath[b]].Path() })
	h.mu.Unlock()
	return append([]*graph.Node{loss}, grads...)
}

// reset drops the compiled graph (after a checkpoint load replaced the
// variables).
func (h *hostStep) reset() error {
	exec, err := model.NewExec(h.tr.Backend, h.tr.Store, h.graph)
	if err != nil {
		return err
	}
	h.exec = exec
	return nil
}

// step runs one optimisation step on batch (the trainer's batch tensors; the
// last one is the learning rate) and returns the batch loss.
func (h *hostStep) step(batch []*tensors.Tensor, lr float64) (float64, error) {
	args := make([]any, 6)
	for i := range args {
		args[i] = batch[i]
	}
	outs, err := h.exec.Exec(args...)
	for _, t := range batch {
		t.MustFinalizeAll()
	}
	if err != nil {
		return math.NaN(), err
	}
	defer func() {
		for _, t := range outs {
			t.MustFinalizeAll()
		}
	}()
	loss := scalarOf(outs[0])
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return math.NaN(), fmt.Errorf("models: loss %g: no update taken", loss)
	}
	grads := outs[1:]
	if len(grads) != len(h.vars) {
		return math.NaN(), fmt.Errorf("models: %d gradients for %d variables", len(grads), len(h.vars))
	}
	// Σ‖g‖² in path order (clipNorm's norm), also the check that every
	// gradient is finite before anything is updated.
	var sq float64
	for _, i := range h.byPath {
		sq += sumSquares(grads[i])
	}
	if math.IsNaN(sq) || math.IsInf(sq, 0) {
		return math.NaN(), fmt.Errorf("models: non-finite gradient (Σ g² = %g): no update taken", sq)
	}
	store := h.tr.Store
	dtype := h.tr.dtype

	// Counters: the global step (int64) and Adam's own step (loss dtype), as
	// GoMLX's Adam keeps them; the learning-rate variable holds this step's rate.
	gsVar := optimizer.GetGlobalStepVar(store)
	gs, err := scalarVar[int64](gsVar)
	if err != nil {
		return math.NaN(), err
	}
	gs++
	if err := gsVar.SetValue(tensors.FromValue(gs)); err != nil {
		return math.NaN(), err
	}
	adamStepVar := store.Scope(AdamScope).WithInitializer(initializer.Zero).
		VariableWithShape("step", scalarShape(dtype)).SetTrainable(false)
	t, err := incrementScalar(adamStepVar, dtype)
	if err != nil {
		return math.NaN(), err
	}
	if err := lrVar(store.RootScope(), dtype).SetValue(scalarTensor(dtype, lr)); err != nil {
		return math.NaN(), err
	}

	// Global-norm clipping.
	scale := 1.0
	if h.clipNorm > 0 {
		scale = math.Min(1, h.clipNorm/(math.Sqrt(sq)+1e-12))
	}
	hp := adam.Hyper{
		Scale: scale, LR: lr, Beta1: h.beta1, Beta2: h.beta2, Eps: h.eps, WD: h.weightDecay,
		C1: 1 / (1 - math.Pow(h.beta1, t)), C2: 1 / (1 - math.Pow(h.beta2, t)),
		EMADecay: h.emaDecay, FirstEMA: gs == 1,
	}
	for i, v := range h.vars {
		if err := h.update(v, grads[i], hp); err != nil {
			return math.NaN(), fmt.Errorf("models: update of %s: %w", v.Path(), err)
		}
	}
	return loss, nil
}

// update applies the fused step to one variable.
func (h *hostStep) update(v *model.Variable, grad *tensors.Tensor, hp adam.Hyper) error {
	store := h.tr.Store
	scopePath := AdamScope + v.Scope()
	m1 := store.Scope(scopePath).WithInitializer(initializer.Zero).
		VariableWithShape(v.Name()+"_1st_moment", v.Shape()).SetTrainable(false)
	m2 := store.Scope(scopePath).WithInitializer(initializer.Zero).
		VariableWithShape(v.Name()+"_2nd_moment", v.Shape()).SetTrainable(false)
	var ema *model.Variable
	if hp.EMADecay > 0 {
		ema = store.Scope(EMAScope+v.Scope()).WithInitializer(initializer.Zero).
			VariableWithShape(v.Name(), v.Shape()).SetTrainable(false)
	}
	ts := []*model.Variable{v, m1, m2}
	if ema != nil {
		ts = append(ts, ema)
	}
	vals := make([]*tensors.Tensor, len(ts))
	for i, x := range ts {
		if err := ensureValue(x); err != nil {
			return err
		}
		val, err := x.Value()
		if err != nil {
			return err
		}
		vals[i] = val
	}
	switch h.tr.dtype {
	case dtypes.Float32:
		return withMutable[float32](vals, grad, func(p, m, s, e, g []float32) { adam.Fused32(p, m, s, e, g, hp) })
	case dtypes.Float64:
		return withMutable[float64](vals, grad, func(p, m, s, e, g []float64) { adam.FusedGeneric(p, m, s, e, g, hp) })
	}
	return fmt.Errorf("dtype %s", h.tr.dtype)
}

// withMutable gives fn the flat slices of p, m, s, e (nil when vals has no
// EMA) and g, marking the variables' values changed.
func withMutable[T float32 | float64](vals []*tensors.Tensor, grad *tensors.Tensor, fn func(p, m, s, e, g []T)) error {
	var err error
	grad.MustConstFlatData(func(gAny any) {
		g := gAny.([]T)
		flats := make([][]T, 4)
		var rec func(k int)
		rec = func(k int) {
			if k == len(vals) {
				fn(flats[0], flats[1], flats[2], flats[3], g)
				return
			}
			if e := vals[k].MutableFlatData(func(f any) { flats[k] = f.([]T); rec(k + 1) }); e != nil && err == nil {
				err = e
			}
		}
		rec(0)
	})
	return err
}

// sumSquares is Σ g² of a gradient tensor, in float64.
func sumSquares(t *tensors.Tensor) float64 {
	var s float64
	t.MustConstFlatData(func(flat any) {
		switch g := flat.(type) {
		case []float32:
			s = adam.SumSquares32(g)
		case []float64:
			for _, x := range g {
				s += x * x
			}
		}
	})
	return s
}

// ensureValue initialises a variable created on the host (its initializer
// runs only when a graph uses it).
func ensureValue(v *model.Variable) error {
	if v.HasValue() {
		return nil
	}
	z := tensors.FromShape(v.Shape())
	return v.SetValue(z)
}
