package mixture

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// N = 60 000, d = 64, σ = 1e-4: weights come from distances of order σ²
// next to norms of order 1, so the expanded distance loses precision; the
// results must stay finite and match a direct computation.
func TestSmallSigmaLargeNIsStable(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	rng := rand.New(rand.NewPCG(17, 18))
	const n, d = 60000, 64
	y := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			y.Set(i, j, rng.Float64())
		}
	}
	m, _ := NewDirac(y, nil)
	s := schedule.DefaultEDM()
	s.TMin = 1e-5
	const tt = 1e-4 // σ = 1e-4
	x := mat.NewDense(4, d, nil)
	for i := 0; i < 4; i++ {
		// between two data points, so that two weights compete
		p, q := y.RawRowView(rng.IntN(n)), y.RawRowView(rng.IntN(n))
		for j := 0; j < d; j++ {
			x.Set(i, j, p[j]+1e-4*rng.NormFloat64())
		}
		if i == 3 {
			for j := 0; j < d; j++ {
				x.Set(i, j, 0.5*(p[j]+q[j]))
			}
		}
	}
	v := randDense(rng, 4, d, 1)
	r := eval(t, m, s, tt, x, LogProb|Score|Trace|MatVec, v)
	for i := 0; i < 4; i++ {
		// direct reference: exact distances, log-sum-exp, centred covariance
		xi := x.RawRowView(i)
		ls := make([]float64, n)
		lmax := math.Inf(-1)
		for k := 0; k < n; k++ {
			ls[k] = -sqDist(xi, y.RawRowView(k), 1) / (2 * tt * tt)
			lmax = math.Max(lmax, ls[k])
		}
		z := 0.0
		ybar := make([]float64, d)
		for k := 0; k < n; k++ {
			ls[k] = math.Exp(ls[k] - lmax)
			z += ls[k]
		}
		for k := 0; k < n; k++ {
			ls[k] /= z
			if ls[k] > 0 {
				for j := range ybar {
					ybar[j] += ls[k] * y.At(k, j)
				}
			}
		}
		cov := 0.0
		for k := 0; k < n; k++ {
			if ls[k] > 0 {
				cov += ls[k] * sqDist(y.RawRowView(k), ybar, 1)
			}
		}
		trace := float64(d)/(tt*tt) - cov/(tt*tt*tt*tt)
		logq := lmax + math.Log(z) - math.Log(n) - 0.5*float64(d)*math.Log(2*math.Pi*tt*tt)
		if math.IsNaN(r.Trace[i]) || math.IsInf(r.Trace[i], 0) || math.Abs(r.Trace[i]-trace) > 1e-6*math.Abs(float64(d)/(tt*tt)) {
			t.Errorf("point %d: trace %g, direct %g", i, r.Trace[i], trace)
		}
		if math.Abs(r.LogProb[i]-logq) > 1e-6*math.Abs(logq) {
			t.Errorf("point %d: log q %g, direct %g", i, r.LogProb[i], logq)
		}
		for j, sj := range r.Score.RawRowView(i) {
			want := -(xi[j] - ybar[j]) / (tt * tt)
			if math.Abs(sj-want) > 1e-6*(math.Abs(want)+1/tt) {
				t.Fatalf("point %d: score[%d] %g, direct %g", i, j, sj, want)
			}
		}
		for _, f := range r.MatVec.RawRowView(i) {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				t.Fatalf("non-finite matvec")
			}
		}
	}
}

func TestBadInputIsAnErrorNotAPanic(t *testing.T) {
	good := mat.NewDense(2, 2, []float64{0, 0, 1, 1})
	if _, err := NewDirac(&mat.Dense{}, nil); !errors.Is(err, ErrInput) {
		t.Errorf("empty data: %v", err)
	}
	if _, err := NewDirac(mat.NewDense(1, 2, []float64{math.NaN(), 0}), nil); !errors.Is(err, ErrInput) {
		t.Errorf("NaN data: %v", err)
	}
	for _, w := range [][]float64{{1, -1}, {0, 0}, {1}, {math.Inf(1), 1}, {math.NaN(), 1}} {
		if _, err := NewDirac(good, w); !errors.Is(err, ErrInput) {
			t.Errorf("weights %v: %v", w, err)
		}
	}
	m, _ := NewDirac(good, nil)
	x := mat.NewDense(1, 2, []float64{0.1, 0.2})
	at := schedule.Coefficients{T: 0.5, Alpha: 1, Sigma: 0.3}
	bad := []Query{
		{At: at, X: mat.NewDense(1, 3, nil), Want: Trace},                              // dim mismatch
		{At: at, X: mat.NewDense(1, 2, []float64{math.NaN(), 0}), Want: Trace},         // NaN query
		{At: schedule.Coefficients{Alpha: 1, Sigma: math.NaN()}, X: x, Want: Trace},    // NaN σ
		{At: schedule.Coefficients{Alpha: 1, Sigma: 0}, X: x, Want: Trace},             // σ = 0
		{At: schedule.Coefficients{Alpha: 0, Sigma: 1}, X: x, Want: Trace},             // α = 0
		{At: at, X: x, Want: MatVec},                                                   // no vectors
		{At: at, X: mat.NewDense(2, 2, nil), V: mat.NewDense(3, 2, nil), Want: MatVec}, // wrong count
		{At: at, X: x, Want: 0},       // nothing
		{X: x, Want: Trace},           // no time
		{At: at, X: nil, Want: Trace}, // no points
		{At: schedule.Coefficients{T: 0.5, Alpha: math.Inf(1), Sigma: 0.3}, X: x, Want: Trace}, // infinite α
	}
	for i, q := range bad {
		if _, err := m.Eval(q); err == nil {
			t.Errorf("bad query %d accepted", i)
		}
	}
	notPSD := mat.NewSymDense(2, []float64{1, 2, 2, 1})
	if _, err := NewGaussian(good, []*mat.SymDense{notPSD, notPSD}, nil); !errors.Is(err, ErrInput) {
		t.Errorf("non-PSD covariance: %v", err)
	}
	if _, err := NewGaussian(good, []*mat.SymDense{mat.NewSymDense(3, nil), mat.NewSymDense(2, nil)}, nil); !errors.Is(err, ErrInput) {
		t.Errorf("wrong covariance size: %v", err)
	}
}

// At σ far below the component scales, Prop. 3's I/σ² − (α²/σ⁴) Cov loses
// every digit to cancellation; a single Gaussian's Fisher must still be
// (α² Σ + σ² I)⁻¹ and its score −(α²Σ + σ²I)⁻¹(x − αμ).
func TestGaussianFisherIsAccurateAtTinySigma(t *testing.T) {
	mu := mat.NewDense(1, 2, []float64{0.5, 0.5})
	cov := mat.NewSymDense(2, []float64{0.05, 0.02, 0.02, 0.03})
	g, err := NewGaussian(mu, []*mat.SymDense{cov}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.DefaultSubVP()
	for _, tt := range []float64{1e-5, 1e-3, 0.1} {
		c, _ := schedule.At(s, tt)
		x := mat.NewDense(2, 2, []float64{0.6, 0.3, 0.1, 0.9})
		v := mat.NewDense(1, 2, []float64{1, -2})
		r := eval(t, g, s, tt, x, Full|Trace|MatVec|Score, v)
		ct := mat.NewSymDense(2, nil)
		ct.ScaleSym(c.Alpha*c.Alpha, cov)
		ct.SetSym(0, 0, ct.At(0, 0)+c.Sigma*c.Sigma)
		ct.SetSym(1, 1, ct.At(1, 1)+c.Sigma*c.Sigma)
		var inv mat.Dense
		if err := inv.Inverse(ct); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if !mat.EqualApprox(r.Fisher[i], &inv, 1e-9*mat.Norm(&inv, 2)) {
				t.Errorf("t=%g: F = %v, want (α²Σ+σ²I)⁻¹ = %v", tt, mat.Formatted(r.Fisher[i]), mat.Formatted(&inv))
			}
			if tr := mat.Trace(&inv); math.Abs(r.Trace[i]-tr) > 1e-9*tr {
				t.Errorf("t=%g: tr F = %g, want %g", tt, r.Trace[i], tr)
			}
			var fv, sc mat.VecDense
			fv.MulVec(&inv, v.RowView(0))
			if e := relErr(r.MatVec.RawRowView(i), fv.RawVector().Data); e > 1e-9 {
				t.Errorf("t=%g: F v rel err %g", tt, e)
			}
			dx := mat.NewVecDense(2, []float64{x.At(i, 0) - c.Alpha*0.5, x.At(i, 1) - c.Alpha*0.5})
			sc.MulVec(&inv, dx)
			sc.ScaleVec(-1, &sc)
			if e := relErr(r.Score.RawRowView(i), sc.RawVector().Data); e > 1e-9 {
				t.Errorf("t=%g: score rel err %g", tt, e)
			}
		}
	}
}

// TestEvalErrsOnNonFiniteResults: data or means of 1e300 overflow the
// squared distances; Eval must say so instead of returning NaN log q_t.
func TestEvalErrsOnNonFiniteResults(t *testing.T) {
	c, err := schedule.At(schedule.DefaultVP(), 0.5)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(1, 2, []float64{0.3, 0.4})
	dirac, err := NewDirac(mat.NewDense(2, 2, []float64{1e300, 0, 0, 0}), nil)
	if err != nil {
		t.Fatal(err)
	}
	gauss, err := NewGaussian(mat.NewDense(1, 2, []float64{1e300, 0}), []*mat.SymDense{mat.NewSymDense(2, []float64{1, 0, 0, 1})}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, m := range map[string]Mixture{"dirac": dirac, "gaussian": gauss} {
		res, err := m.Eval(Query{At: c, X: x, Want: LogProb | Trace})
		if !errors.Is(err, ErrNonFinite) {
			t.Errorf("%s: err %v, result %+v; want ErrNonFinite", name, err, res)
		}
	}
}
