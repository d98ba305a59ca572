package models

import (
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TestSkipHutchinsonIsRegistered: the mixture-skip network's trace is made
// from its spec by dfx/access's registry (registered here, not there), its
// name round-trips, it is SkipHutchinsonTrace with the spec's K and the
// env's seed and probe rows, and a network without a skip is refused
// (TestSkipHutchinsonIsTheControlVariate checks its numbers).
func TestSkipHutchinsonIsRegistered(t *testing.T) {
	g := skipMixture(t, 2)
	store := NewStore()
	store.SetParams(map[string]any{ParamNumClasses: 2, ParamWidth: 16, ParamDepth: 1, ParamArch: ArchFiLM, ParamDType: "float64"})
	if err := SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	backend, sched := MustNewBackend(), schedule.DefaultVP()
	net, err := NewAccessNet(backend, store, sched, false)
	if err != nil {
		t.Fatal(err)
	}
	co, _ := schedule.At(sched, 0.3)
	x := mat.NewDense(2, g.Dim(), []float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 1, 0, 0, 0, 0, 0})
	if _, err := net.EpsAt(co, x); err != nil { // creates the variables
		t.Fatal(err)
	}
	env := access.Env{Net: net, Seed: 5, ProbeRows: 2}
	want, err := NewSkipHutchinson(net, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	want.SetMaxRows(2)
	wantTr, err := want.Trace(co, x)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"skip-hutchinson:3", "skip-hutchinson-3"} {
		est, err := access.NewTrace(spec, env)
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := est.(*SkipHutchinsonTrace); !ok || est.Name() != "skip-hutchinson-3" || h.maxRows != 2 {
			t.Errorf("%s builds %q (%T)", spec, est.Name(), est)
		}
		got, err := est.Trace(co, x)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, wantTr) {
			t.Errorf("%s: %v, NewSkipHutchinson(K = 3, seed 5): %v", spec, got, wantTr)
		}
	}
	if !slices.Contains(access.TraceForms(), "skip-hutchinson-K") {
		t.Errorf("access lists %v without skip-hutchinson-K", access.TraceForms())
	}
	if _, err := access.NewTrace("skip-hutchinson:0", env); err == nil {
		t.Error("skip-hutchinson:0 built")
	}
	plain := NewStore()
	plain.SetParams(map[string]any{ParamWidth: 16, ParamDepth: 1, ParamDType: "float64"})
	pnet, err := NewAccessNet(backend, plain, sched, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := access.NewTrace("skip-hutchinson:3", access.Env{Net: pnet}); err == nil || !strings.Contains(err.Error(), "mixture skip") {
		t.Errorf("a network without a skip: %v", err)
	}
}
