package access

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/score"
)

// NetModel's Fused option evaluates ε_θ and DF-TM (or the centred DF-TM)
// in one graph: the same ε and trace as the separate graphs, and no trace
// when none is asked.
func TestNetModelFusedIsTheSeparateEvaluation(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	c := mustAt(f.s, f.t)
	net := f.mix.Net()
	dftm, err := NewDFTM(net)
	if err != nil {
		t.Fatal(err)
	}
	dftmc, err := NewDFTMCentred(net)
	if err != nil {
		t.Fatal(err)
	}
	for _, est := range []score.TraceEstimator{dftm, dftmc} {
		fused, err := NetModel{Net: net, Trace: est, Fused: true}.Eval(c, f.xm, score.WantTrace|score.WantDenoiser)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := NetModel{Net: net, Trace: est}.Eval(c, f.xm, score.WantTrace|score.WantDenoiser)
		if err != nil {
			t.Fatal(err)
		}
		if !mat.EqualApprox(fused.Eps, plain.Eps, 1e-12) || !mat.EqualApprox(fused.Denoiser, plain.Denoiser, 1e-12) {
			t.Errorf("%s: fused ε differs from Net.EpsAt's", est.Name())
		}
		for i := range plain.Trace {
			if math.Abs(fused.Trace[i]-plain.Trace[i]) > 1e-9*math.Abs(plain.Trace[i]) {
				t.Errorf("%s: fused trace %g, separate %g", est.Name(), fused.Trace[i], plain.Trace[i])
			}
		}
		bare, err := NetModel{Net: net, Trace: est, Fused: true}.Eval(c, f.xm, score.WantEps)
		if err != nil || bare.Trace != nil {
			t.Errorf("%s: without WantTrace: trace %v, %v", est.Name(), bare.Trace, err)
		}
	}
}

// NetModel's Guidance is Net.Guided with the rows' classes and scales:
// ε̃ = ε_∅ + s (ε_c − ε_∅) per row, and no trace.
func TestNetModelGuidanceIsClassifierFreeGuidance(t *testing.T) {
	f := newFixture(t, 3, 5, 3, 0.3)
	c := mustAt(f.s, f.t)
	base := f.mix.Net()
	// a toy conditional network: ε_c = (1 + c) ε_∅ with ε_∅ the mixture's
	cond := Network{Eps: base.Eps, Guided: func(scope *model.Scope, x, class, scale, alpha, sigma *graph.Node) *graph.Node {
		e := base.Eps(scope, x, alpha, sigma)
		k := graph.InsertAxes(graph.AddScalar(graph.ConvertDType(class, x.DType()), 1), -1)
		return GuidedEpsGraph(graph.Mul(k, e), e, scale)
	}}
	net := NewNet(base.Backend, base.Store, base.Schedule, base.DType, cond)
	class, scale := []int{0, 2, 5}, []float64{1, 0.5, 3}
	ev, err := NetModel{Net: net, Guidance: &Guidance{Class: class, Scale: scale}}.Eval(c, f.xm, score.WantScore)
	if err != nil {
		t.Fatal(err)
	}
	uncond, err := base.EpsAt(c, f.xm)
	if err != nil {
		t.Fatal(err)
	}
	for i := range class {
		for j := range f.d {
			e := uncond.At(i, j)
			want := e + scale[i]*(float64(1+class[i])*e-e)
			if got := ev.Eps.At(i, j); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("row %d: ε̃[%d] = %g, want %g", i, j, got, want)
			}
		}
	}
	if ev.Score == nil {
		t.Error("the score was not filled in")
	}
	if _, err := (NetModel{Net: net, Trace: f.mix, Guidance: &Guidance{Class: class, Scale: scale}}).Eval(c, f.xm, score.WantTrace); err == nil {
		t.Error("a guided model gave a trace")
	}
	if _, err := (NetModel{Net: base, Guidance: &Guidance{Class: class, Scale: scale}}).Eval(c, f.xm, score.WantEps); err == nil {
		t.Error("guidance of a network without Guided")
	}
	if _, err := (NetModel{Net: net, Guidance: &Guidance{Class: class[:2], Scale: scale[:2]}}).Eval(c, f.xm, score.WantEps); err == nil {
		t.Error("guidance with 2 classes for 3 rows")
	}
}
