package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// TestControlVariateTrace: for a skip network with a non-zero residual, the
// skip mixture's exact trace plus the residual's exact (VJP) trace equals
// the whole network's VJP trace, and with Hutchinson on the residual the
// estimate is unbiased around it. Dropping either term fails.
func TestControlVariateTrace(t *testing.T) {
	g := skipMixture(t, 2)
	store := NewStore()
	store.SetParams(map[string]any{ParamNumClasses: 2, ParamWidth: 16, ParamDepth: 1, ParamArch: ArchFiLM, ParamDType: "float64"})
	if err := SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	backend := MustNewBackend()
	sched := schedule.DefaultVP()
	whole, err := NewAccessNet(backend, store, sched, false)
	if err != nil {
		t.Fatal(err)
	}
	co, _ := schedule.At(sched, 0.3)
	x := mat.NewDense(3, g.Dim(), []float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 1, 0, 0, 0, 0, 0, -0.5, 0.5, 0.2, 0.1, 0, 0.3})
	if _, err := whole.EpsAt(co, x); err != nil { // creates the variables
		t.Fatal(err)
	}
	// Every weight of the residual from a fixed stream (the initialiser's
	// state depends on what ran before in the package), so that the
	// Hutchinson check below is deterministic.
	rng := rand.New(rand.NewPCG(7, 8))
	if store.GetVariable("/"+ScoreScope+"/output/weights_t") == nil {
		t.Fatal("no output weights")
	}
	var paths []string
	for v := range store.IterVariables() {
		if v.Trainable && HasScope(v.Scope(), ScoreScope) {
			paths = append(paths, v.Path())
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		w := store.GetVariable(p)
		vals := make([]float64, w.Shape().Size())
		for i := range vals {
			vals[i] = 0.3 * rng.NormFloat64()
		}
		if err := w.SetValue(tensors.FromFlatDataAndDimensions(vals, w.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
	whole, _ = NewAccessNet(backend, store, sched, false)
	exactWhole, err := access.NewVJPTrace(whole, 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := exactWhole.Trace(co, x)
	if err != nil {
		t.Fatal(err)
	}
	rnet, err := ResidualAccessNetwork(store)
	if err != nil {
		t.Fatal(err)
	}
	res := access.NewNet(backend, store, sched, whole.DType, rnet)
	mix, err := MixtureSkipOf(store)
	if err != nil {
		t.Fatal(err)
	}
	resExact, _ := access.NewVJPTrace(res, 0)
	known := score.Exact{Mixture: mix}
	got, err := access.ControlVariate{Known: known, Residual: resExact}.Trace(co, x)
	if err != nil {
		t.Fatal(err)
	}
	skipOnly, _ := known.Trace(co, x)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-8*math.Abs(want[i]) {
			t.Errorf("row %d: skip + residual trace %g, whole network %g", i, got[i], want[i])
		}
		if math.Abs(skipOnly[i]-want[i]) < 1e-3*math.Abs(want[i]) {
			t.Errorf("row %d: the residual adds nothing to the trace (%g vs %g): the test cannot see it", i, skipOnly[i], want[i])
		}
	}
	// Hutchinson on the residual: unbiased around the exact trace.
	hutch, _ := access.NewHutchinson(res, 4000, access.Rademacher, 1)
	est, err := access.ControlVariate{Known: known, Residual: hutch}.Trace(co, x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(est[i]-want[i]) > 0.01*math.Abs(want[i]) {
			t.Errorf("row %d: skip + Hutchinson-4000 %g, exact %g", i, est[i], want[i])
		}
	}
}
