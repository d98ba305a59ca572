package mnist

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// tinyNetworks are randomly initialised networks of the MNIST shapes
// (width 16), enough to check that the wrappers compute what they claim.
func tinyNetworks(t *testing.T) *Networks {
	t.Helper()
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	store := models.NewStore()
	spec, _ := SpecByName("eps")
	store.SetParams(spec.Params)
	store.SetParams(map[string]any{models.ParamWidth: 16, models.ParamDepth: 1})
	n, err := models.NewAccessNet(backend, store, Schedule(), true)
	if err != nil {
		t.Fatal(err)
	}
	n.Nu = func(scope *model.Scope, x, a, s *graph.Node) *graph.Node {
		null := graph.AddScalar(graph.Zeros(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dimensions[0])), 10)
		return models.CentredTraceNet(scope, models.Inputs{X: x, Alpha: a, Sigma: s, Class: null})
	}
	return &Networks{Backend: backend, Store: store, Net: n}
}

func randomImages(b int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(b, Dim, nil)
	for i := range b {
		for j := range Dim {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	return x
}

// TestFusedGraphMatchesTheAccessEstimators: the one-graph ε / DF-TM / DF-TM-c
// evaluation the likelihood runs use equals access's separate estimators
// (a wrong sign or power of σ in the fused formula fails it).
func TestFusedGraphMatchesTheAccessEstimators(t *testing.T) {
	nets := tinyNetworks(t)
	dftm, err := access.NewDFTM(nets.Net)
	if err != nil {
		t.Fatal(err)
	}
	dftmc, err := access.NewDFTMCentred(nets.Net)
	if err != nil {
		t.Fatal(err)
	}
	x := randomImages(3, 1)
	for _, tm := range []float64{0.05, 0.5} {
		c, err := schedule.At(Schedule(), tm)
		if err != nil {
			t.Fatal(err)
		}
		evTM, err := access.NetModel{Net: nets.Net, Trace: dftm, Fused: true}.Eval(c, x, score.WantTrace)
		if err != nil {
			t.Fatal(err)
		}
		evC, err := access.NetModel{Net: nets.Net, Trace: dftmc, Fused: true}.Eval(c, x, score.WantTrace)
		if err != nil {
			t.Fatal(err)
		}
		eps, tr, nu := evTM.Eps, evTM.Trace, evC.Trace
		if !mat.Equal(eps, evC.Eps) {
			t.Errorf("t=%g: the two fused graphs' ε differ", tm)
		}
		wantEps, _ := nets.Net.EpsAt(c, x)
		wantTr, _ := dftm.Trace(c, x)
		wantNu, _ := dftmc.Trace(c, x)
		if e := stats.RelNorm(eps.RawMatrix().Data, wantEps.RawMatrix().Data); e > 1e-5 {
			t.Errorf("t=%g: ε differs by %g", tm, e)
		}
		if e := stats.RelNorm(tr, wantTr); e > 1e-4 {
			t.Errorf("t=%g: DF-TM trace differs by %g: %v vs %v", tm, e, tr, wantTr)
		}
		if e := stats.RelNorm(nu, wantNu); e > 1e-4 {
			t.Errorf("t=%g: centred DF-TM trace differs by %g", tm, e)
		}
	}
}

// TestGuidedEpsInterpolatesConditionalAndUnconditional: scale 0 is the
// unconditional ε (the null class, as access.Net evaluates it), scale 1 the
// conditional one, and scale s the affine combination ε_∅ + s(ε_c − ε_∅).
func TestGuidedEpsInterpolatesConditionalAndUnconditional(t *testing.T) {
	nets := tinyNetworks(t)
	x := randomImages(4, 2)
	class := []int{0, 3, 7, 9}
	c, err := schedule.At(Schedule(), 0.3)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s float64) *mat.Dense {
		e, err := nets.GuidedEps(c, x, class, []float64{s, s, s, s})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	unc, err := nets.Net.EpsAt(c, x)
	if err != nil {
		t.Fatal(err)
	}
	e0, e1, e5 := at(0), at(1), at(5)
	if d := stats.RelNorm(e0.RawMatrix().Data, unc.RawMatrix().Data); d > 1e-5 {
		t.Errorf("scale 0 differs from the unconditional ε by %g", d)
	}
	if d := stats.RelNorm(e1.RawMatrix().Data, e0.RawMatrix().Data); d < 1e-3 {
		t.Errorf("scale 1 equals scale 0 (%g): the class is ignored", d)
	}
	want := mat.NewDense(4, Dim, nil)
	want.Sub(e1, e0)
	want.Scale(5, want)
	want.Add(want, e0)
	if d := stats.RelNorm(e5.RawMatrix().Data, want.RawMatrix().Data); d > 1e-4 {
		t.Errorf("scale 5 is not ε_∅ + 5(ε_c − ε_∅): %g", d)
	}
	if _, err := nets.GuidedEps(c, x, []int{0, 1, 2, 10}, []float64{1, 1, 1, 1}); err == nil {
		t.Error("class 10 accepted")
	}
}

// TestTrainingResumesExactly: training interrupted after 3 steps and resumed
// gives the same weights as 6 uninterrupted steps (same seed), and the state
// file is gone once training ends.
func TestTrainingResumesExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the MNIST training set")
	}
	spec, _ := SpecByName("classifier")
	spec.Params = copyParams(spec.Params)
	spec.Params[models.ParamWidth] = 16
	spec.Params[models.ParamBatchSize] = 8
	checkResumesExactly(t, spec)
}

// TestSkipNetworkTrainsAndResumesExactly: an ε-network with a mixture skip
// (fitted before training, and again on resume), on dequantised data, with
// validation, resumes to the same weights and skip as an uninterrupted run.
func TestSkipNetworkTrainsAndResumesExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the MNIST training set and fits a mixture")
	}
	spec, _ := SpecByName("eps-gmm-mlp")
	spec.Params = copyParams(spec.Params)
	spec.Params["/score/"+models.ParamWidth] = 16
	spec.Params["/score/"+models.ParamDepth] = 1
	spec.Params[models.ParamBatchSize] = 8
	spec.Skip = &mixture.FitOptions{Components: 1, PerClass: true, Rank: 4, Shrink: 0.2, Idle: 1e-4, Seed: 1}
	rec, _ := checkResumesExactly(t, spec)
	if len(rec.Val) != 2 || rec.Val[0].Step != 0 || rec.Val[1].Step != 6 || !(rec.Val[1].BPD > 3 && rec.Val[1].BPD < 8) {
		t.Errorf("validation record %+v, want points at steps 0 and 6 with a plausible bpd", rec.Val)
	}
}

// checkResumesExactly trains spec for 6 steps straight and, elsewhere, 3
// steps, an interruption and a resume; both must give the same variables.
// It returns the resumed run's record and folder.
func checkResumesExactly(t *testing.T, spec NetSpec) (*TrainRecord, string) {
	t.Helper()
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	val := 0
	if spec.Scope == models.ScoreScope {
		val = 6 // once, at the end (a validation is a PF-ODE solve)
	}
	straight, resumed := t.TempDir(), t.TempDir()
	if _, err := TrainNetwork(context.Background(), backend, spec, TrainOptions{Steps: 6, Out: straight, LogEvery: 1, ValEvery: val}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = TrainNetwork(ctx, backend, spec, TrainOptions{Steps: 6, Out: resumed, LogEvery: 1, ValEvery: val, OnStep: func(s int64) {
		if s == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, err := os.Stat(statePath(resumed, spec.Name)); err != nil {
		t.Fatalf("no state after the interruption: %v", err)
	}
	if _, err := TrainNetwork(context.Background(), backend, spec, TrainOptions{Steps: 6, Out: resumed, LogEvery: 1, ValEvery: val, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(statePath(resumed, spec.Name)); !os.IsNotExist(err) {
		t.Errorf("state left after training ended: %v", err)
	}
	a, _, err := LoadNetwork(straight, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	b, recB, err := LoadNetwork(resumed, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(recB.Curve.Step) != 6 {
		t.Errorf("resumed loss curve has %d points, want 6", len(recB.Curve.Step))
	}
	n := 0
	for v := range a.IterVariables() {
		w := b.GetVariable(v.Path())
		if w == nil {
			t.Fatalf("variable %s missing after resume", v.Path())
		}
		va, _ := v.Value()
		vb, _ := w.Value()
		if !va.Equal(vb) {
			t.Errorf("variable %s differs between straight and resumed training", v.Path())
		}
		n++
	}
	if n == 0 {
		t.Fatal("no variables compared")
	}
	return recB, resumed
}

// TestSampleIsTheDDIMLoopItReplaced: Sample runs through dfx/pfode (Solve
// with DDIM, ε-driven) and gives, bit for bit, what a plain loop of
// pfode.DDIMStep over the guided ε on the same grid gives — on a network
// without its DF-TM networks (a store alone, as OpenEps loads) too.
func TestSampleIsTheDDIMLoopItReplaced(t *testing.T) {
	tiny := tinyNetworks(t)
	for _, nets := range []*Networks{tiny, {Backend: tiny.Backend, Store: tiny.Store}} {
		class, scale := []int{0, 4, 9}, []float64{1, 2.5, 0}
		cfg := SampleConfig{Steps: 5, Seed: 3, Final: 0.02}
		got, err := nets.Sample(cfg, class, scale)
		if err != nil {
			t.Fatal(err)
		}
		s := Schedule()
		_, tMax := s.Interval()
		x := InitialNoise(cfg.Seed, 0, len(class))
		at := func(t float64) schedule.Coefficients {
			return schedule.Coefficients{T: t, Alpha: s.Alpha(t), Sigma: s.Sigma(t)}
		}
		for k := range cfg.Steps {
			t0 := tMax + (cfg.Final-tMax)*float64(k)/float64(cfg.Steps)
			t1 := tMax + (cfg.Final-tMax)*float64(k+1)/float64(cfg.Steps)
			eps, err := nets.GuidedEps(at(t0), x, class, scale)
			if err != nil {
				t.Fatal(err)
			}
			pfode.DDIMStep(x, at(t0), at(t1), &score.Eval{Eps: eps})
		}
		if !mat.Equal(got, x) {
			t.Errorf("Sample differs from the DDIM loop (largest row sum of |Δ| %g)", normInf(got, x))
		}
	}
}

func normInf(a, b *mat.Dense) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return mat.Norm(&d, math.Inf(1))
}
