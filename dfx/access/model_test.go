package access

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// TestNetModelIsTheExactModelForAnExactNet: the mixture's graph "network"
// through NetModel gives the float64 mixture's score, denoiser and trace
// (score.Exact), and the trace is the same in chunks of one point.
func TestNetModelIsTheExactModelForAnExactNet(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	c := mustAt(f.s, f.t)
	ref, err := mixture.NewDirac(f.ym, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := score.Exact{Mixture: ref}.Eval(c, f.xm, score.WantScore|score.WantDenoiser|score.WantEps|score.WantTrace)
	if err != nil {
		t.Fatal(err)
	}
	for _, per := range []int{0, 1} {
		m := NetModel{Net: f.mix.Net(), Trace: f.mix, PerCall: per}
		got, err := m.Eval(c, f.xm, score.WantScore|score.WantDenoiser|score.WantTrace)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range map[string][2]*mat.Dense{"score": {got.Score, want.Score}, "ε": {got.Eps, want.Eps}, "denoiser": {got.Denoiser, want.Denoiser}} {
			for q := range 4 {
				if e := stats.RelNorm(p[0].RawRowView(q), p[1].RawRowView(q)); e > 1e-9 {
					t.Errorf("PerCall %d, %s of query %d: relative error %g", per, name, q, e)
				}
			}
		}
		if e := floats.Distance(got.Trace, want.Trace, math.Inf(1)); e > 1e-9*floats.Norm(want.Trace, math.Inf(1)) {
			t.Errorf("PerCall %d: trace %v, want %v", per, got.Trace, want.Trace)
		}
	}
	if _, err := (NetModel{Net: f.mix.Net()}).Eval(c, f.xm, score.WantTrace); err == nil {
		t.Error("a trace without a trace estimator")
	}
}

// TestDFEAMatrixIsTheOperatorItsGraphAndHostFormsApply: DFEAMatrix is the
// host operator's matrix (OperatorMatrix on the unit vectors), and the
// network form (the exact net's own ȳ) agrees with the host form given
// that ȳ.
func TestDFEAMatrixIsTheOperatorItsGraphAndHostFormsApply(t *testing.T) {
	f := newFixture(t, 4, 5, 3, 0.4)
	c := mustAt(f.s, f.t)
	ybar, err := f.mix.Net().DenoiserAt(c, f.xm)
	if err != nil {
		t.Fatal(err)
	}
	x0 := tensormat.Rows(f.y[:3])
	st := score.State{At: c, X: f.xm, Denoiser: ybar, Endpoint: x0}
	mats, err := OperatorMatrix(DFEA{}, st)
	if err != nil {
		t.Fatal(err)
	}
	for q := range 3 {
		m := DFEAMatrix(c, x0.RawRowView(q), ybar.RawRowView(q))
		var diff mat.Dense
		diff.Sub(m, mats[q])
		if e := mat.Norm(&diff, math.Inf(1)) / mat.Norm(m, math.Inf(1)); e > 1e-12 {
			t.Errorf("query %d: DFEAMatrix differs from the operator by %g (relative)", q, e)
		}
	}
	ea, err := NewDFEA(f.mix.Net())
	if err != nil {
		t.Fatal(err)
	}
	v := tensormat.Rows(f.x[:3])
	host, err := ea.Apply(st, v)
	if err != nil {
		t.Fatal(err)
	}
	st.Denoiser = nil
	graph, err := ea.Apply(st, v)
	if err != nil {
		t.Fatal(err)
	}
	for q := range 3 {
		if e := stats.RelNorm(graph.RawRowView(q), host.RawRowView(q)); e > 1e-9 {
			t.Errorf("query %d: graph and host DF-EA differ by %g", q, e)
		}
	}
}

// TestDFEAErrorBoundHoldsAndIsTight: with the exact denoiser (δ = 0) the
// bound (α²/σ⁴)·2D² holds for DF-EA at every query, and a denoiser error
// δ adds exactly (α²/σ⁴)δ(‖ȳ‖ + ‖ŷ‖).
func TestDFEAErrorBoundHoldsAndIsTight(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	c := mustAt(f.s, f.t)
	var dmax float64
	for _, y := range f.y {
		dmax = math.Max(dmax, floats.Norm(y, 2))
	}
	for q := range 4 {
		x0 := f.y[q%5]
		ea := DFEAMatrix(c, x0, f.refYbar[q])
		var hs float64
		for i := range f.d {
			for j := range f.d {
				e := f.refF[q][i][j] - ea.At(i, j)
				hs += e * e
			}
		}
		if b := DFEAErrorBound(c, dmax, 0, 0, 0); math.Sqrt(hs) > b {
			t.Errorf("query %d: ‖F − F_EA‖ = %g above the bound %g", q, math.Sqrt(hs), b)
		}
	}
	s2 := f.sg * f.sg
	k := f.a * f.a / (s2 * s2)
	if got, want := DFEAErrorBound(c, 1, 0.5, 2, 3)-DFEAErrorBound(c, 1, 0, 2, 3), k*0.5*5; math.Abs(got-want) > 1e-12*want {
		t.Errorf("δ term %g, want %g", got, want)
	}
}
