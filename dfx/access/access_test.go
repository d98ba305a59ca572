package access

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// testBackend is GoMLX's Go backend with ops run one at a time (the
// parallel scheduler can deadlock on 2 cores), shared by every test.
var testBackend = sync.OnceValue(func() compute.Backend {
	b, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		panic(err)
	}
	return b
})

// fixture: a Dirac mixture in d dimensions and queries near it, float64.
type fixture struct {
	mix     *Mixture
	y, x    [][]float64 // rows, for the plain-Go references
	ym, xm  *mat.Dense  // the same as matrices, for the estimators
	s       schedule.Schedule
	t       float64
	a, sg   float64
	d       int
	refF    [][][]float64 // exact Fisher per query, plain Go
	refYbar [][]float64
}

func newFixture(t *testing.T, d, n, b int, tm float64) *fixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, uint64(d)))
	f := &fixture{s: schedule.DefaultVP(), t: tm, d: d}
	f.a, f.sg = f.s.Alpha(tm), f.s.Sigma(tm)
	for range n {
		row := make([]float64, d)
		for j := range row {
			row[j] = rng.NormFloat64()
		}
		f.y = append(f.y, row)
	}
	for q := range b {
		row := make([]float64, d)
		for j := range row {
			row[j] = f.a*f.y[q%n][j] + f.sg*rng.NormFloat64()
		}
		f.x = append(f.x, row)
	}
	var err error
	f.ym, f.xm = tensormat.Rows(f.y), tensormat.Rows(f.x)
	f.mix, err = NewMixture(testBackend(), f.s, dtypes.Float64, f.ym)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range f.x {
		F, ybar := referenceFisher(f.y, x, f.a, f.sg)
		f.refF, f.refYbar = append(f.refF, F), append(f.refYbar, ybar)
	}
	return f
}

// referenceFisher is Proposition analytic_dirac in plain float64:
// F = I/σ² − (α²/σ⁴)(Σ wᵢ yᵢyᵢᵀ − ȳȳᵀ), with a log-sum-exp softmax.
func referenceFisher(y [][]float64, x []float64, a, s float64) ([][]float64, []float64) {
	d := len(x)
	logits := make([]float64, len(y))
	top := math.Inf(-1)
	for i, yi := range y {
		for j := range d {
			r := x[j] - a*yi[j]
			logits[i] -= r * r / (2 * s * s)
		}
		top = math.Max(top, logits[i])
	}
	var z float64
	for i := range logits {
		logits[i] = math.Exp(logits[i] - top)
		z += logits[i]
	}
	ybar := make([]float64, d)
	second := make([][]float64, d)
	for j := range second {
		second[j] = make([]float64, d)
	}
	for i, yi := range y {
		w := logits[i] / z
		for j := range d {
			ybar[j] += w * yi[j]
			for k := range d {
				second[j][k] += w * yi[j] * yi[k]
			}
		}
	}
	F := make([][]float64, d)
	c := a * a / (s * s * s * s)
	for j := range d {
		F[j] = make([]float64, d)
		for k := range d {
			F[j][k] = -c * (second[j][k] - ybar[j]*ybar[k])
		}
		F[j][j] += 1 / (s * s)
	}
	return F, ybar
}

func trace(F [][]float64) (tr float64) {
	for i := range F {
		tr += F[i][i]
	}
	return
}

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Max(math.Abs(want), 1e-300) }

func TestVJPTraceOfExactScoreEqualsExactMixtureTrace(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	vjp, err := NewVJPTrace(f.mix.Net(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, est := range []score.TraceEstimator{vjp, f.mix} {
		got, err := est.Trace(mustAt(f.s, f.t), f.xm)
		if err != nil {
			t.Fatal(err)
		}
		for q := range f.x {
			if e := relErr(got[q], trace(f.refF[q])); e > 1e-6 {
				t.Errorf("%s query %d: %g, exact %g (rel %g)", est.Name(), q, got[q], trace(f.refF[q]), e)
			}
		}
	}
}

func TestVJPMatVecOfExactScoreEqualsExactMixtureMatVec(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	vjp, err := NewVJPMatVec(f.mix.Net())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	v := mat.NewDense(len(f.x), 3, nil)
	for q := range len(f.x) {
		v.SetRow(q, []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()})
	}
	for _, op := range []score.FisherOperator{vjp, f.mix} {
		got, err := op.Apply(score.State{At: mustAt(f.s, f.t), X: f.xm}, v)
		if err != nil {
			t.Fatal(err)
		}
		for q := range f.x {
			var num, den float64
			for j := range f.d {
				var want float64
				for k := range f.d {
					want += f.refF[q][j][k] * v.At(q, k)
				}
				num += (got.At(q, j) - want) * (got.At(q, j) - want)
				den += want * want
			}
			if e := math.Sqrt(num / den); e > 1e-6 {
				t.Errorf("%s query %d: relative error %g", op.Name(), q, e)
			}
		}
	}
}

func TestDFTMWithExactTraceNetworkEqualsExactTrace(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.5)
	tm, err := NewDFTM(f.mix.Net())
	if err != nil {
		t.Fatal(err)
	}
	got, err := tm.Trace(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	for q := range f.x {
		if e := relErr(got[q], trace(f.refF[q])); e > 1e-6 {
			t.Errorf("query %d: DF-TM %g, exact %g", q, got[q], trace(f.refF[q]))
		}
	}
}

// TestDFEAErrorIsWithinPropErrorBoundEA: with the exact ȳ (δ₂ = 0) and any
// endpoint x₀ with ‖x₀‖ ≤ D_y, ‖F_EA − F‖_HS = (α²/σ⁴)‖Σwᵢyᵢyᵢᵀ − x₀x₀ᵀ‖_HS
// ≤ (α²/σ⁴)·2D_y² (Prop. error_bound_ea). The paper states
// (α²/σ³)(2D_y² + √d δ₂); that form is logged for comparison (it is smaller
// by a factor σ when σ < 1).
func TestDFEAErrorIsWithinPropErrorBoundEA(t *testing.T) {
	for _, tm := range []float64{0.1, 0.3, 0.7} {
		f := newFixture(t, 3, 5, 4, tm)
		ea, err := NewDFEA(f.mix.Net())
		if err != nil {
			t.Fatal(err)
		}
		var dy float64
		for _, y := range f.y {
			var n2 float64
			for _, v := range y {
				n2 += v * v
			}
			dy = math.Max(dy, math.Sqrt(n2))
		}
		for q := range f.x {
			x0 := f.y[q%len(f.y)] // a data point: the endpoint of a converged solve
			var hs float64
			for j := range f.d {
				e := mat.NewDense(1, f.d, nil)
				e.Set(0, j, 1)
				col, err := ea.Apply(score.State{At: mustAt(f.s, f.t), X: tensormat.Rows(f.x[q : q+1]), Endpoint: tensormat.Rows([][]float64{x0})}, e)
				if err != nil {
					t.Fatal(err)
				}
				for k := range f.d {
					r := col.At(0, k) - f.refF[q][k][j]
					hs += r * r
				}
			}
			hs = math.Sqrt(hs)
			bound := f.a * f.a / math.Pow(f.sg, 4) * 2 * dy * dy
			paper := f.a * f.a / math.Pow(f.sg, 3) * 2 * dy * dy
			if hs > bound*(1+1e-9) {
				t.Errorf("t=%g query %d: ‖F_EA − F‖_HS = %g > bound %g", tm, q, hs, bound)
			}
			t.Logf("t=%g σ=%.3f query %d: HS error %.4g, bound α²/σ⁴·2D² %.4g, paper's α²/σ³·2D² %.4g", tm, f.sg, q, hs, bound, paper)
		}
	}
}

func TestHutchPPIsExactWhenTheSketchSpansTheSpace(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	h, err := NewHutchPP(f.mix.Net(), 9, 1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.Trace(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	for q := range f.x {
		if e := relErr(got[q], trace(f.refF[q])); e > 1e-6 {
			t.Errorf("query %d: Hutch++ %g, exact %g", q, got[q], trace(f.refF[q]))
		}
	}
}

// TestHutchinsonIsUnbiasedWithTheoreticalVariance draws many independent
// K-probe estimates and compares their mean with tr F (within 4 standard
// errors) and their variance with theory: Rademacher 2(‖F‖_F² − Σ F_ii²)/K,
// Gaussian 2‖F‖_F²/K (within 25%, ≈ 5 standard errors of a variance from 800 draws).
func TestHutchinsonIsUnbiasedWithTheoreticalVariance(t *testing.T) {
	f := newFixture(t, 4, 3, 1, 0.4)
	F := f.refF[0]
	var fro, diag float64
	for i := range F {
		for j := range F {
			fro += F[i][j] * F[i][j]
		}
		diag += F[i][i] * F[i][i]
	}
	const k, draws = 4, 800
	for _, p := range []Probe{Rademacher, Gaussian} {
		h, err := NewHutchinson(f.mix.Net(), k, p, 0)
		if err != nil {
			t.Fatal(err)
		}
		x := make([][]float64, draws) // one query repeated: draws independent estimates per call
		for i := range x {
			x[i] = f.x[0]
		}
		h.K = k
		est, err := h.Trace(mustAt(f.s, f.t), tensormat.Rows(x))
		if err != nil {
			t.Fatal(err)
		}
		var mean, m2 float64
		for _, e := range est {
			mean += e / draws
		}
		for _, e := range est {
			m2 += (e - mean) * (e - mean) / (draws - 1)
		}
		want := 2 * (fro - diag) / k
		if p == Gaussian {
			want = 2 * fro / k
		}
		if se := math.Sqrt(want / draws); math.Abs(mean-trace(F)) > 4*se {
			t.Errorf("probe %d: mean %g, tr F %g (SE %g)", p, mean, trace(F), se)
		}
		if math.Abs(m2-want) > 0.25*want {
			t.Errorf("probe %d: variance %g, theory %g", p, m2, want)
		}
		t.Logf("probe %d K=%d: mean %.5g (tr F %.5g), variance %.4g (theory %.4g)", p, k, mean, trace(F), m2, want)
	}
}
