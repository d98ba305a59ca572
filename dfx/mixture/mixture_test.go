package mixture

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

func randDense(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return m
}

func randCov(rng *rand.Rand, d int, scale float64) *mat.SymDense {
	a := randDense(rng, d, d, scale)
	s := mat.NewSymDense(d, nil)
	s.SymOuterK(1, a)
	return s
}

func schedules(t *testing.T) []schedule.Schedule {
	var out []schedule.Schedule
	for _, n := range schedule.Names {
		s, err := schedule.ByName(n, schedule.Params{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// testMixtures gives a Dirac and a Gaussian mixture in d = 3.
func testMixtures(t *testing.T) []namedMixture {
	rng := rand.New(rand.NewPCG(1, 2))
	y := randDense(rng, 7, 3, 0.8)
	dir, err := NewDirac(y, []float64{1, 2, 0.5, 1, 3, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	means := randDense(rng, 3, 3, 1)
	covs := []*mat.SymDense{randCov(rng, 3, 0.3), randCov(rng, 3, 0.5), mat.NewSymDense(3, nil)}
	gm, err := NewGaussian(means, covs, []float64{0.2, 0.5, 0.3})
	if err != nil {
		t.Fatal(err)
	}
	return []namedMixture{{"dirac", dir}, {"gaussian", gm}}
}

type namedMixture struct {
	name string
	Mixture
}

// fdDerivative is the fourth-order central difference of f along e_j at x.
func fdDerivative(f func(*mat.Dense) []float64, x *mat.Dense, j int, h float64) []float64 {
	at := func(step float64) []float64 {
		xs := mat.DenseCopyOf(x)
		xs.Set(0, j, xs.At(0, j)+step)
		return f(xs)
	}
	p1, m1, p2, m2 := at(h), at(-h), at(2*h), at(-2*h)
	out := make([]float64, len(p1))
	for k := range out {
		out[k] = (8*(p1[k]-m1[k]) - (p2[k] - m2[k])) / (12 * h)
	}
	return out
}

// queryTimes are times with σ of order 0.05 … 1 relative to the data scale.
func queryTimes(s schedule.Schedule) []float64 {
	switch s.Name() {
	case "ve":
		return []float64{0.2, 0.45, 0.6}
	case "edm":
		return []float64{0.1, 0.5, 1.5}
	default:
		return []float64{0.05, 0.3, 0.7}
	}
}

func eval(t *testing.T, m Mixture, s schedule.Schedule, tt float64, x *mat.Dense, want What, v *mat.Dense) *Result {
	t.Helper()
	c, err := schedule.At(s, tt)
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.Eval(Query{At: c, X: x, V: v, Want: want})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func relErr(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range a {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / math.Max(den, 1e-300))
}

// queryPoints samples x_t near the data: α y + σ ε with y from the data scale.
func queryPoints(rng *rand.Rand, b, d int, c schedule.Coefficients) *mat.Dense {
	x := randDense(rng, b, d, 1)
	for i := 0; i < b; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, c.Alpha*0.8*rng.NormFloat64()+c.Sigma*x.At(i, j))
		}
	}
	return x
}

func TestScoreIsTheGradientOfLogDensity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range testMixtures(t) {
		name := m.name
		for _, s := range schedules(t) {
			for _, tt := range queryTimes(s) {
				c, _ := schedule.At(s, tt)
				x := queryPoints(rng, 4, m.Dim(), c)
				r := eval(t, m, s, tt, x, LogProb|Score, nil)
				h := 1e-3 * c.Sigma
				logq := func(x *mat.Dense) []float64 { return eval(t, m, s, tt, x, LogProb, nil).LogProb }
				for i := 0; i < 4; i++ {
					fd := make([]float64, m.Dim())
					for j := range fd {
						fd[j] = fdDerivative(logq, mat.DenseCopyOf(x.Slice(i, i+1, 0, m.Dim())), j, h)[0]
					}
					if e := relErr(fd, r.Score.RawRowView(i)); e > 1e-6 {
						t.Errorf("%s %s t=%g: score vs FD of log q: rel err %g", name, s.Name(), tt, e)
					}
				}
			}
		}
	}
}

func TestFisherIsTheNegativeHessian(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range testMixtures(t) {
		name := m.name
		d := m.Dim()
		for _, s := range schedules(t) {
			for _, tt := range queryTimes(s) {
				c, _ := schedule.At(s, tt)
				x := queryPoints(rng, 3, d, c)
				r := eval(t, m, s, tt, x, Full, nil)
				h := 1e-3 * c.Sigma
				score := func(x *mat.Dense) []float64 { return eval(t, m, s, tt, x, Score, nil).Score.RawRowView(0) }
				for i := 0; i < 3; i++ {
					fd := make([]float64, 0, d*d)
					for j := 0; j < d; j++ {
						for _, g := range fdDerivative(score, mat.DenseCopyOf(x.Slice(i, i+1, 0, d)), j, h) {
							fd = append(fd, -g)
						}
					}
					got := make([]float64, 0, d*d)
					for j := 0; j < d; j++ {
						for k := 0; k < d; k++ {
							got = append(got, r.Fisher[i].At(k, j))
						}
					}
					if e := relErr(fd, got); e > 1e-6 {
						t.Errorf("%s %s t=%g: Fisher vs FD Hessian: rel err %g", name, s.Name(), tt, e)
					}
				}
			}
		}
	}
}

func TestTraceAndMatVecAgreeWithFullMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, m := range testMixtures(t) {
		name := m.name
		d := m.Dim()
		for _, s := range schedules(t) {
			for _, tt := range queryTimes(s) {
				c, _ := schedule.At(s, tt)
				x := queryPoints(rng, 5, d, c)
				v := randDense(rng, 5, d, 1)
				r := eval(t, m, s, tt, x, Full|Trace|MatVec|SecondMoment|Denoiser, v)
				one := eval(t, m, s, tt, x, MatVec, v.Slice(2, 3, 0, d).(*mat.Dense))
				for i := 0; i < 5; i++ {
					f := r.Fisher[i]
					if tr := mat.Trace(f); math.Abs(tr-r.Trace[i]) > 1e-9*math.Abs(tr) {
						t.Errorf("%s %s t=%g: tr(full) = %g, trace = %g", name, s.Name(), tt, tr, r.Trace[i])
					}
					var fv mat.VecDense
					fv.MulVec(f, v.RowView(i))
					if e := relErr(r.MatVec.RawRowView(i), fv.RawVector().Data); e > 1e-6 {
						t.Errorf("%s %s t=%g: matvec vs full·v rel err %g", name, s.Name(), tt, e)
					}
					fv.MulVec(f, v.RowView(2))
					if e := relErr(one.MatVec.RawRowView(i), fv.RawVector().Data); e > 1e-6 {
						t.Errorf("%s %s: shared vector matvec rel err %g", name, s.Name(), e)
					}
					// Prop. 4: tr F = d/σ² − α²/σ⁴ (E‖x0‖² − ‖ȳ‖²).
					yb := r.Denoiser.RawRowView(i)
					s2 := c.Sigma * c.Sigma
					want := float64(d)/s2 - c.Alpha*c.Alpha/(s2*s2)*(r.SecondMoment[i]-dot(yb, yb))
					if math.Abs(want-r.Trace[i]) > 1e-9*math.Abs(want) {
						t.Errorf("%s: trace formula %g vs %g", name, want, r.Trace[i])
					}
				}
			}
		}
	}
}

func TestFisherIsSymmetricAndBelowIdentityOverSigmaSquared(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, m := range testMixtures(t) {
		name := m.name
		for _, s := range schedules(t) {
			for _, tt := range queryTimes(s) {
				c, _ := schedule.At(s, tt)
				x := queryPoints(rng, 6, m.Dim(), c)
				r := eval(t, m, s, tt, x, Full, nil)
				for _, f := range r.Fisher {
					// SymDense is symmetric by construction; check the eigen-bound.
					var eig mat.EigenSym
					if !eig.Factorize(f, false) {
						t.Fatal("eigen failed")
					}
					top := 1 / (c.Sigma * c.Sigma)
					for _, l := range eig.Values(nil) {
						if l > top*(1+1e-10) {
							t.Errorf("%s %s t=%g: eigenvalue %g > 1/σ² = %g", name, s.Name(), tt, l, top)
						}
					}
				}
			}
		}
	}
}

func TestLogProbMatchesDirectSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	y := randDense(rng, 5, 2, 1)
	w := []float64{1, 0, 2, 1, 1}
	dir, _ := NewDirac(y, w)
	s := schedule.DefaultVP()
	c, _ := schedule.At(s, 0.4)
	x := queryPoints(rng, 3, 2, c)
	r := eval(t, dir, s, 0.4, x, LogProb, nil)
	for i := 0; i < 3; i++ {
		p := 0.0
		for k := 0; k < 5; k++ {
			d2 := sqDist(x.RawRowView(i), y.RawRowView(k), c.Alpha)
			p += w[k] / 5 * math.Exp(-d2/(2*c.Sigma*c.Sigma)) / (2 * math.Pi * c.Sigma * c.Sigma)
		}
		if math.Abs(math.Log(p)-r.LogProb[i]) > 1e-12 {
			t.Errorf("log q = %g, direct %g", r.LogProb[i], math.Log(p))
		}
	}
	// A single Gaussian N(μ, Σ) diffuses to N(αμ, α²Σ + σ²I).
	mu := mat.NewDense(1, 2, []float64{0.5, 0.5})
	cov := mat.NewSymDense(2, []float64{0.3, 0.1, 0.1, 0.2})
	g, _ := NewGaussian(mu, []*mat.SymDense{cov}, nil)
	rg := eval(t, g, s, 0.4, x, LogProb, nil)
	ct := mat.NewSymDense(2, nil)
	ct.ScaleSym(c.Alpha*c.Alpha, cov)
	ct.SetSym(0, 0, ct.At(0, 0)+c.Sigma*c.Sigma)
	ct.SetSym(1, 1, ct.At(1, 1)+c.Sigma*c.Sigma)
	var inv mat.Dense
	_ = inv.Inverse(ct)
	for i := 0; i < 3; i++ {
		dx := []float64{x.At(i, 0) - c.Alpha*0.5, x.At(i, 1) - c.Alpha*0.5}
		qf := dx[0]*(inv.At(0, 0)*dx[0]+inv.At(0, 1)*dx[1]) + dx[1]*(inv.At(1, 0)*dx[0]+inv.At(1, 1)*dx[1])
		want := -0.5*qf - math.Log(2*math.Pi) - 0.5*math.Log(mat.Det(ct))
		if math.Abs(want-rg.LogProb[i]) > 1e-12 {
			t.Errorf("Gaussian log q = %g, want %g", rg.LogProb[i], want)
		}
	}
}

func TestGaussianComponentsShrinkToDiracs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	y := randDense(rng, 4, 3, 1)
	w := []float64{1, 2, 3, 4}
	dir, _ := NewDirac(y, w)
	s := schedule.DefaultVE()
	c, _ := schedule.At(s, 0.4)
	x := queryPoints(rng, 5, 3, c)
	v := randDense(rng, 5, 3, 1)
	all := LogProb | Score | Denoiser | SecondMoment | Trace | MatVec | Full
	rd := eval(t, dir, s, 0.4, x, all, v)
	prev := math.Inf(1)
	for _, eps := range []float64{1e-2, 1e-4, 1e-6, 0} {
		covs := make([]*mat.SymDense, 4)
		for k := range covs {
			covs[k] = randCov(rng, 3, eps)
		}
		g, err := NewGaussian(y, covs, w)
		if err != nil {
			t.Fatal(err)
		}
		rg := eval(t, g, s, 0.4, x, all, v)
		e := relErr(rg.Trace, rd.Trace) + relErr(rg.LogProb, rd.LogProb) + relErr(rg.Score.RawMatrix().Data, rd.Score.RawMatrix().Data) + relErr(rg.MatVec.RawMatrix().Data, rd.MatVec.RawMatrix().Data)
		if eps == 0 && e > 1e-12 {
			t.Errorf("zero covariance differs from Dirac: %g", e)
		}
		if eps > 0 && e > prev {
			t.Errorf("error grew as covariance shrank: %g > %g", e, prev)
		}
		prev = e
	}
}

func TestChunkingDoesNotChangeResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	y := randDense(rng, 1000, 5, 1)
	s := schedule.DefaultVP()
	c, _ := schedule.At(s, 0.3)
	x := queryPoints(rng, 300, 5, c)
	v := randDense(rng, 300, 5, 1)
	all := LogProb | Score | SecondMoment | Trace | MatVec | Full
	a, _ := NewDirac(y, nil)
	b, _ := NewDirac(y, nil)
	b.ChunkSize, b.QueryBlock = 37, 11
	ra, rb := eval(t, a, s, 0.3, x, all, v), eval(t, b, s, 0.3, x, all, v)
	if e := relErr(ra.Trace, rb.Trace) + relErr(ra.LogProb, rb.LogProb) + relErr(ra.MatVec.RawMatrix().Data, rb.MatVec.RawMatrix().Data); e > 1e-12 {
		t.Errorf("chunked results differ: %g", e)
	}
	for i := range ra.Fisher {
		if !mat.EqualApprox(ra.Fisher[i], rb.Fisher[i], 1e-9) {
			t.Fatalf("chunked full Fisher differs at %d", i)
		}
	}
}

func TestWeightsActLikeRepeatedPoints(t *testing.T) {
	y := mat.NewDense(2, 2, []float64{0, 0, 1, 1})
	y3 := mat.NewDense(3, 2, []float64{0, 0, 1, 1, 1, 1})
	a, _ := NewDirac(y, []float64{1, 2})
	b, _ := NewDirac(y3, nil)
	s := schedule.DefaultEDM()
	x := mat.NewDense(2, 2, []float64{0.3, 0.2, -1, 2})
	ra, rb := eval(t, a, s, 0.7, x, LogProb|Trace, nil), eval(t, b, s, 0.7, x, LogProb|Trace, nil)
	if relErr(ra.Trace, rb.Trace) > 1e-14 || relErr(ra.LogProb, rb.LogProb) > 1e-14 {
		t.Errorf("weights 1:2 differ from repeated point: %v %v", ra.Trace, rb.Trace)
	}
}

// TestHugeWeightsAreOnlyAScale: weights are relative, so 1e308 each (whose
// sum overflows float64) is the uniform mixture, and 1e308:2e-308 keeps its
// ratio; all-zero weights are refused.
func TestHugeWeightsAreOnlyAScale(t *testing.T) {
	y := mat.NewDense(2, 2, []float64{0, 0, 1, 1})
	huge, err := NewDirac(y, []float64{1e308, 1e308})
	if err != nil {
		t.Fatalf("weights of 1e308: %v", err)
	}
	uniform, _ := NewDirac(y, nil)
	if !slices.Equal(huge.logPi, uniform.logPi) {
		t.Errorf("1e308 each: log weights %v, want %v", huge.logPi, uniform.logPi)
	}
	if _, err := NewDirac(y, []float64{0, 0}); err == nil {
		t.Error("all-zero weights were accepted")
	}
}

// TestMatVecTakesSeveralVectorsAPoint: with m vectors a point (V [m·B, d],
// point i's j-th at row j·B + i) each row of MatVec is the point's Fisher
// times its vector, the rest of the result as with one vector, for the
// Dirac mixture, a full-covariance and low-rank Gaussian ones (with idle
// coordinates), in one chunk of queries and several.
func TestMatVecTakesSeveralVectorsAPoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	mixtures := testMixtures(t)
	low, _ := lowRankCase(t)
	mixtures = append(mixtures, namedMixture{"low-rank gaussian", low},
		namedMixture{"image-like gaussian", imageLikeMixture(t, rng, []int{5, 1, 12, 5, 7})})
	s := schedule.DefaultVP()
	const b, sets = 37, 3
	for _, m := range mixtures {
		d := m.Dim()
		for _, tt := range []float64{1e-3, 0.1, 0.6} {
			c, _ := schedule.At(s, tt)
			x := queryPoints(rng, b, d, c)
			v := randDense(rng, sets*b, d, 1)
			got, err := m.Eval(Query{At: c, X: x, V: v, Want: MatVec | Full | Trace})
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := got.MatVec.Dims(); r != sets*b {
				t.Fatalf("%s: MatVec has %d rows, want %d", m.name, r, sets*b)
			}
			for j := range sets {
				one, err := m.Eval(Query{At: c, X: x, V: v.Slice(j*b, (j+1)*b, 0, d).(*mat.Dense), Want: MatVec | Trace})
				if err != nil {
					t.Fatal(err)
				}
				for i := range b {
					var fv mat.VecDense
					fv.MulVec(got.Fisher[i], v.RowView(j*b+i))
					if e := relErr(got.MatVec.RawRowView(j*b+i), fv.RawVector().Data); e > 1e-6 {
						t.Errorf("%s t=%g: vector %d of point %d: F v rel. err %g", m.name, tt, j, i, e)
					}
					if e := relErr(got.MatVec.RawRowView(j*b+i), one.MatVec.RawRowView(i)); e > 1e-12 {
						t.Errorf("%s t=%g: vector %d of point %d: %g from the set alone", m.name, tt, j, i, e)
					}
					if got.Trace[i] != one.Trace[i] {
						t.Errorf("%s t=%g: point %d's trace %g with %d sets, %g with one", m.name, tt, i, got.Trace[i], sets, one.Trace[i])
					}
				}
			}
		}
	}
	if _, err := mixtures[0].Eval(Query{At: schedule.Coefficients{Alpha: 1, Sigma: 1}, X: mat.NewDense(2, 3, nil), V: mat.NewDense(3, 3, nil), Want: MatVec}); err == nil {
		t.Error("3 vectors for 2 points: no error")
	}
}
