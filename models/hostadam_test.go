package models

import (
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// floatsOf reads every non-metric variable of a store as float64s by path.
func floatsOf(t *testing.T, store *model.Store) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") || strings.HasPrefix(v.Path(), "/#rng") {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		val.MustConstFlatData(func(flat any) {
			switch f := flat.(type) {
			case []float32:
				for _, x := range f {
					out[v.Path()] = append(out[v.Path()], float64(x))
				}
			case []float64:
				out[v.Path()] = append(out[v.Path()], f...)
			case []int64:
				for _, x := range f {
					out[v.Path()] = append(out[v.Path()], float64(x))
				}
			}
		})
	}
	return out
}

// The host optimiser (Go backend) must take the same steps as GoMLX's graph
// Adam + clipping + EMA (clippedAdamEMA), the reference: after 25 steps of a
// class-conditional DSM run with clipping active, weight decay, warm-up and
// EMA, every variable — weights, both Adam moments, the EMA copies, the step
// counters and the learning rate — agrees to float32 rounding.
func TestHostOptimizerTakesTheGraphOptimizersSteps(t *testing.T) {
	data, labels := tinyData(256, 3)
	run := func(host bool) map[string][]float64 {
		store := tinyStore()
		store.SetParams(map[string]any{ParamNumClasses: 4, ParamClipNorm: 0.05, ParamWeightDecay: 0.01,
			ParamWarmupSteps: 5, ParamEMADecay: 0.9})
		tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, data, labels)
		if err != nil {
			t.Fatal(err)
		}
		if tr.host == nil {
			t.Fatal("the Go backend should use the host optimiser")
		}
		if !host {
			tr.host = nil
		}
		if _, err := tr.TrainSteps(25); err != nil {
			t.Fatal(err)
		}
		return floatsOf(t, store)
	}
	ref, got := run(false), run(true)
	if len(ref) != len(got) {
		t.Fatalf("graph path has %d variables, host path %d", len(ref), len(got))
	}
	for path, r := range ref {
		g, ok := got[path]
		if !ok || len(g) != len(r) {
			t.Errorf("%s: missing or resized on the host path", path)
			continue
		}
		var worst, scale float64
		for i := range r {
			worst = math.Max(worst, math.Abs(g[i]-r[i]))
			scale = math.Max(scale, math.Abs(r[i]))
		}
		if worst > 1e-4*math.Max(scale, 1e-3) {
			t.Errorf("%s: max |host − graph| = %.3g (max |graph| %.3g)", path, worst, scale)
		}
	}
}

// Dense's two weight layouts compute the same function: a network built
// with W [out, in] ("weights_t") and given the transposes of an [in, out]
// network's weights returns the same ε̂, and a store that already holds
// legacy "weights" keeps that layout whatever ParamWeightLayout says.
func TestDenseLayoutsComputeTheSameNetwork(t *testing.T) {
	data, _ := tinyData(64, 4)
	build := func(layout string) *Trainer {
		store := tinyStore()
		store.SetParam(ParamWeightLayout, layout)
		tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.TrainSteps(1); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	legacy, modern := build(LayoutInOut), build(LayoutOutIn)
	for v := range legacy.Store.IterVariables() {
		if !v.Trainable {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		if v.Name() != "weights" {
			c, err := val.LocalClone()
			if err != nil {
				t.Fatal(err)
			}
			if err := modern.Store.GetVariable(v.Path()).SetValue(c); err != nil {
				t.Fatal(err)
			}
			continue
		}
		dims := val.Shape().Dimensions
		tv := make([]float32, dims[0]*dims[1])
		val.MustConstFlatData(func(flat any) {
			f := flat.([]float32)
			for i := range dims[0] {
				for j := range dims[1] {
					tv[j*dims[0]+i] = f[i*dims[1]+j]
				}
			}
		})
		mv := modern.Store.GetVariable(v.Scope() + "/weights_t")
		if mv == nil {
			t.Fatalf("modern store lacks %s/weights_t", v.Scope())
		}
		if err := mv.SetValue(tensors.FromFlatDataAndDimensions(tv, dims[1], dims[0])); err != nil {
			t.Fatal(err)
		}
	}
	eps := func(tr *Trainer) []float32 {
		e := model.MustNewExec(tr.Backend, tr.Store, func(scope *model.Scope, x, a, s *graph.Node) *graph.Node {
			return Eps(scope, Inputs{X: x, Alpha: a, Sigma: s})
		})
		out := e.MustExec([][]float32{{0.3, -1.2}, {2, 0.5}}, []float32{0.8, 0.3}, []float32{0.6, 0.95})[0]
		return tensors.MustCopyFlatData[float32](out)
	}
	a, b := eps(legacy), eps(modern)
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-5 {
			t.Fatalf("ε̂ in-out %v, out-in %v", a, b)
		}
	}
	legacy.Store.SetParam(ParamWeightLayout, LayoutOutIn) // the stored variables decide
	if c := eps(legacy); c[0] != a[0] {
		t.Errorf("a legacy store switched layout: %v vs %v", c, a)
	}
}

// On float64 stores the host optimiser agrees with GoMLX's graph optimiser
// too, and a non-finite loss is an error with nothing updated.
func TestHostOptimizerFloat64AndNonFiniteLoss(t *testing.T) {
	data, _ := tinyData(128, 5)
	run := func(host bool) map[string][]float64 {
		store := tinyStore()
		store.SetParams(map[string]any{ParamDType: "float64", ParamWeightDecay: 0.01})
		tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !host {
			tr.host = nil
		}
		if _, err := tr.TrainSteps(15); err != nil {
			t.Fatal(err)
		}
		return floatsOf(t, store)
	}
	ref, got := run(false), run(true)
	for path, r := range ref {
		for i := range r {
			if math.Abs(got[path][i]-r[i]) > 1e-9*math.Max(1, math.Abs(r[i])) {
				t.Fatalf("%s[%d]: host %g, graph %g", path, i, got[path][i], r[i])
			}
		}
	}
	bad := make([][]float64, 64)
	for i := range bad {
		bad[i] = []float64{1e30, -1e30}
	}
	store := tinyStore()
	tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TrainSteps(1); err == nil || tr.Step() != 0 {
		t.Errorf("a non-finite loss: err %v, step %d; want an error at step 0", err, tr.Step())
	}
}
