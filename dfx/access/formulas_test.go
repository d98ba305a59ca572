package access

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// TestDFEAMatchesAFloat64EvaluationOfEqEAApprox evaluates eq. EA_approx in
// plain float64, F_EA v = v/σ² − (α²/σ⁴)⟨x₀,v⟩x₀ + (α²/σ⁴)⟨ȳ,v⟩ȳ with ȳ the
// exact denoiser (the mixture's network) and x₀ an explicit endpoint, at
// points where F_EA differs from F (x₀ is not the nearest data point), and
// requires DFEA to agree to 1e-9 relative. Dropping the ȳȳᵀ term or flipping
// its sign changes F_EA v by ≥ 5% here (checked).
func TestDFEAMatchesAFloat64EvaluationOfEqEAApprox(t *testing.T) {
	for _, tm := range []float64{0.1, 0.3} {
		f := newFixture(t, 4, 5, 6, tm)
		ea, err := NewDFEA(f.mix.Net())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(3, 9))
		b := len(f.x)
		x0, v := mat.NewDense(b, f.d, nil), mat.NewDense(b, f.d, nil)
		for q := range b {
			x0.SetRow(q, f.y[(q+2)%len(f.y)])
			for j := range f.d { // v leans on ȳ, so that ⟨ȳ,v⟩ȳ is not small by chance
				v.Set(q, j, f.refYbar[q][j]+0.5*rng.NormFloat64())
			}
		}
		got, err := ea.Apply(score.State{At: mustAt(f.s, tm), X: f.xm, Endpoint: x0}, v)
		if err != nil {
			t.Fatal(err)
		}
		ybar := mat.NewDense(b, f.d, nil)
		for q := range b {
			ybar.SetRow(q, f.refYbar[q])
		}
		host, err := DFEAApply(ybar, x0, v, f.a, f.sg) // the host form, from ȳ at hand
		if err != nil {
			t.Fatal(err)
		}
		c := f.a * f.a / math.Pow(f.sg, 4)
		for q := range b {
			vq, x0q, yq := v.RawRowView(q), x0.RawRowView(q), f.refYbar[q]
			want := make([]float64, f.d)
			floats.AddScaled(want, 1/(f.sg*f.sg), vq)
			floats.AddScaled(want, -c*floats.Dot(x0q, vq), x0q)
			ybarTerm := make([]float64, f.d)
			floats.AddScaled(ybarTerm, c*floats.Dot(yq, vq), yq)
			floats.Add(want, ybarTerm)
			if e := stats.RelNorm(got.RawRowView(q), want); e > 1e-9 {
				t.Errorf("t=%g query %d: DF-EA relative error %g against eq. EA_approx", tm, q, e)
			}
			if e := stats.RelNorm(host.RawRowView(q), want); e > 1e-12 {
				t.Errorf("t=%g query %d: DFEAApply relative error %g against eq. EA_approx", tm, q, e)
			}
			fv := make([]float64, f.d)
			for j := range f.d {
				fv[j] = floats.Dot(f.refF[q][j], vq)
			}
			if e := stats.RelNorm(want, fv); e < 1e-2 {
				t.Errorf("t=%g query %d: F_EA v is within %g of F v: not a discriminating point", tm, q, e)
			}
			if r := floats.Norm(ybarTerm, 2) / floats.Norm(want, 2); r < 0.05 {
				t.Errorf("t=%g query %d: the ȳȳᵀ term is only %g of F_EA v: not a discriminating point", tm, q, r)
			}
		}
	}
}

// TestHutchPPWithASketchSmallerThanDIsUnbiased: with k = M/3 = 2 sketch
// vectors in d = 6 (so the remainder term matters), the mean of many
// independent Hutch++ estimates (probes drawn per query from one seeded
// stream, over several seeds) is tr F within 4 standard errors, and the
// remainder carries a large part of the trace, so a wrongly scaled remainder
// (e.g. ×5, checked) is far outside.
func TestHutchPPWithASketchSmallerThanDIsUnbiased(t *testing.T) {
	f := newFixture(t, 6, 4, 1, 0.4)
	tr := trace(f.refF[0])
	const reps = 300
	x := mat.NewDense(reps, f.d, nil)
	for i := range reps {
		x.SetRow(i, f.x[0])
	}
	var est []float64
	for seed := range uint64(4) {
		h, err := NewHutchPP(f.mix.Net(), 6, seed)
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.Trace(mustAt(f.s, f.t), x)
		if err != nil {
			t.Fatal(err)
		}
		est = append(est, got...)
	}
	mean, sd := meanStd(est)
	se := sd / math.Sqrt(float64(len(est)))
	if math.Abs(mean-tr) > 4*se {
		t.Errorf("Hutch++ (k=2, d=6): mean %g over %d estimates, tr F %g, standard error %g", mean, len(est), tr, se)
	}
	if se > 0.01*math.Abs(tr) {
		t.Errorf("standard error %g is too large to detect a biased remainder (tr F %g)", se, tr)
	}
	t.Logf("Hutch++ k=2 d=6: mean %.6g ± %.2g (SE), tr F %.6g, per-estimate sd %.3g", mean, se, tr, sd)
}

func meanStd(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x / float64(len(v))
	}
	for _, x := range v {
		sd += (x - mean) * (x - mean) / float64(len(v)-1)
	}
	return mean, math.Sqrt(sd)
}

// perturbed is the mixture's exact network with t_θ = t* + tau and
// ȳ_θ = ȳ + delta (ε_θ = ε − (α/σ)·delta), for probing DF-TM's error.
func perturbed(f *fixture, tau float64, delta []float64) *Net {
	exact := f.mix.Net()
	net := Network{
		Eps: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			dy := graph.Const(x.Graph(), [][]float64{delta}) // [1, d]
			shift := graph.Mul(graph.InsertAxes(graph.Div(alpha, sigma), -1), dy)
			return graph.Sub(exact.Eps(scope, x, alpha, sigma), shift)
		},
		T: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return graph.AddScalar(exact.T(scope, x, alpha, sigma), tau)
		},
	}
	return NewNet(exact.Backend, nil, f.s, dtypes.Float64, net)
}

// dftmError is tr F_DFTM − tr F (dfx/mixture's exact trace) per query, and
// ‖ȳ‖ of the exact denoiser, for the perturbation (tau, delta).
func dftmError(t *testing.T, f *fixture, tau float64, delta []float64) (errs, ybarNorm []float64) {
	t.Helper()
	ref, err := mixture.NewDirac(f.ym, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Eval(mixture.Query{At: mustAt(f.s, f.t), X: f.xm, Want: mixture.Trace | mixture.Denoiser})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewDFTM(perturbed(f, tau, delta))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Trace(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	for q := range got {
		errs = append(errs, got[q]-want.Trace[q])
		ybarNorm = append(ybarNorm, floats.Norm(want.Denoiser.RawRowView(q), 2))
	}
	return errs, ybarNorm
}

// TestDFTMErrorIsWithinTheCorrectedBoundWhichIsAttained: for perturbed t_θ
// (δ₁ = |t_θ − t*|) and ȳ_θ (δ₂ = ‖ȳ_θ − ȳ‖) of an exact mixture network,
// DF-TM's error equals (α²/σ⁴)[d(t* − t_θ) + ‖ȳ_θ‖² − ‖ȳ‖²], never exceeds
// DFTMErrorBound, reaches it when t_θ < t* and ȳ_θ − ȳ ∥ ȳ, and comes within
// a factor 2 of it for random perturbations.
func TestDFTMErrorIsWithinTheCorrectedBoundWhichIsAttained(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, tm := range []float64{0.1, 0.5} {
		f := newFixture(t, 3, 5, 4, tm)
		c := f.a * f.a / math.Pow(f.sg, 4)
		worst := 0.0
		for trial := range 12 {
			delta1, delta2 := 1e-3*(1+rng.Float64()), 1e-2*(1+rng.Float64())
			tau := delta1
			if trial%2 == 0 {
				tau = -delta1
			}
			delta := make([]float64, f.d)
			for j := range delta {
				delta[j] = rng.NormFloat64()
			}
			floats.Scale(delta2/floats.Norm(delta, 2), delta)
			errs, yn := dftmError(t, f, tau, delta)
			for q, e := range errs {
				yb := f.refYbar[q]
				moved := make([]float64, f.d)
				floats.AddTo(moved, yb, delta)
				identity := c * (-float64(f.d)*tau + floats.Dot(moved, moved) - floats.Dot(yb, yb))
				if math.Abs(e-identity) > 1e-7*(1+math.Abs(identity)) {
					t.Errorf("t=%g query %d: error %g, identity gives %g", tm, q, e, identity)
				}
				bound := DFTMErrorBound(f.d, f.a, f.sg, delta1, delta2, yn[q])
				if math.Abs(e) > bound*(1+1e-9) {
					t.Errorf("t=%g query %d: |error| %g > bound %g", tm, q, math.Abs(e), bound)
				}
				worst = math.Max(worst, math.Abs(e)/bound)
			}
		}
		if worst < 0.5 {
			t.Errorf("t=%g: largest |error|/bound over random perturbations %g: bound loose by more than 2×", tm, worst)
		}
		// The extremal perturbation: t_θ below t*, ȳ_θ moved outward along ȳ.
		for q := range f.x {
			yb := f.refYbar[q]
			delta := slicesScale(1e-2/floats.Norm(yb, 2), yb)
			errs, yn := dftmError(t, f, -1e-3, delta)
			bound := DFTMErrorBound(f.d, f.a, f.sg, 1e-3, 1e-2, yn[q])
			if r := errs[q] / bound; math.Abs(r-1) > 1e-6 {
				t.Errorf("t=%g query %d: aligned perturbation reaches %g of the bound, want 1", tm, q, r)
			}
		}
		t.Logf("t=%g σ=%.3f α²/σ⁴=%.4g: largest |error|/bound over random perturbations %.3f", tm, f.sg, c, worst)
	}
}

func slicesScale(s float64, v []float64) []float64 {
	out := make([]float64, len(v))
	floats.ScaleTo(out, s, v)
	return out
}

// TestPrintedDFTMBoundFailsForASingleDirac: one Dirac at ‖y‖ = 1 (ȳ = y, t*
// exact, δ₁ = 0), ȳ_θ off by δ₂ = 10⁻³ along y at σ = 0.1: DF-TM's error is
// ≈ 20, the corrected bound is attained, and the bound printed in Prop.
// error_bound_trace, (α²/σ⁴)δ₁ + δ₂'²/σ² with δ₂' = (α/σ)δ₂ the ε error, is
// 0.01.
func TestPrintedDFTMBoundFailsForASingleDirac(t *testing.T) {
	f := newFixture(t, 3, 1, 1, 0.5)
	f.t = timeAtSigma(f, 0.1)
	f.a, f.sg = f.s.Alpha(f.t), f.s.Sigma(f.t)
	y := []float64{0.6, 0.8, 0}
	f.y, f.ym = [][]float64{y}, tensormat.Rows([][]float64{y})
	f.x = [][]float64{{f.a*y[0] + 0.05, f.a*y[1] - 0.03, 0.02}}
	f.xm = tensormat.Rows(f.x)
	var err error
	if f.mix, err = NewMixture(testBackend(), f.s, dtypes.Float64, f.ym); err != nil {
		t.Fatal(err)
	}
	const delta2 = 1e-3
	errs, yn := dftmError(t, f, 0, slicesScale(delta2, y))
	corrected := DFTMErrorBound(f.d, f.a, f.sg, 0, delta2, yn[0])
	epsErr := f.a / f.sg * delta2
	printed := epsErr * epsErr / (f.sg * f.sg)
	t.Logf("σ=%.4g: DF-TM error %.4g, corrected bound %.4g, printed bound %.4g", f.sg, errs[0], corrected, printed)
	if math.Abs(errs[0]-corrected) > 1e-6*corrected {
		t.Errorf("error %g, corrected bound %g: should be attained", errs[0], corrected)
	}
	if errs[0] < 15 || errs[0] < 1000*printed {
		t.Errorf("error %g against the printed bound %g: expected ≈ 20 against 0.01", errs[0], printed)
	}
}

// timeAtSigma is the t at which the fixture's schedule has σ(t) = sigma (bisection).
func timeAtSigma(f *fixture, sigma float64) float64 {
	lo, hi := f.s.Interval()
	for range 200 {
		mid := (lo + hi) / 2
		if f.s.Sigma(mid) < sigma {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// TestNetHostWrappersMatchPackageMixture: EpsAt, DenoiserAt, TAt and NuAt of
// the exact mixture network agree with dfx/mixture's float64 denoiser and
// posterior second moment, and a network given by its denoiser
// (EpsFromDenoiser) has the same ε.
func TestNetHostWrappersMatchPackageMixture(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.4)
	ref, err := mixture.NewDirac(f.ym, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Eval(mixture.Query{At: mustAt(f.s, f.t), X: f.xm, Want: mixture.Denoiser | mixture.SecondMoment})
	if err != nil {
		t.Fatal(err)
	}
	n := f.mix.Net()
	eps, err := n.EpsAt(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	den, err := n.DenoiserAt(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := n.TAt(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	nu, err := n.NuAt(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	d := float64(f.d)
	for q := range f.x {
		yb := want.Denoiser.RawRowView(q)
		if e := stats.RelNorm(den.RawRowView(q), yb); e > 1e-9 {
			t.Errorf("query %d: DenoiserAt relative error %g", q, e)
		}
		wantEps := make([]float64, f.d)
		for j := range wantEps {
			wantEps[j] = (f.x[q][j] - f.a*yb[j]) / f.sg
		}
		if e := stats.RelNorm(eps.RawRowView(q), wantEps); e > 1e-9 {
			t.Errorf("query %d: EpsAt relative error %g", q, e)
		}
		if e := relErr(tn[q], want.SecondMoment[q]/d); e > 1e-9 {
			t.Errorf("query %d: TAt %g, want %g", q, tn[q], want.SecondMoment[q]/d)
		}
		wantNu := f.a * f.a / (f.sg * f.sg) * (want.SecondMoment[q] - floats.Dot(yb, yb)) / d
		if e := relErr(nu[q], wantNu); e > 1e-7 {
			t.Errorf("query %d: NuAt %g, want %g", q, nu[q], wantNu)
		}
	}
	viaDenoiser := NewNet(n.Backend, nil, n.Schedule, n.DType, Network{Eps: EpsFromDenoiser(
		func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return DenoiserGraph(n.Network, scope, x, alpha, sigma)
		})})
	eps2, err := viaDenoiser.EpsAt(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	for q := range f.x {
		if e := stats.RelNorm(eps2.RawRowView(q), eps.RawRowView(q)); e > 1e-9 {
			t.Errorf("query %d: ε through EpsFromDenoiser(ȳ) differs by %g", q, e)
		}
	}
	noT := *n
	noT.T = nil
	if _, err := noT.TAt(mustAt(f.s, f.t), f.xm); err == nil {
		t.Error("TAt without a T network accepted")
	}
}
