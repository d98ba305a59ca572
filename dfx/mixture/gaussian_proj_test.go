package mixture

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// imageLikeMixture is a labelled mixture in d = 48 whose components have
// the given ranks, the first idle coordinates of each an image-like border
// (the mean there −1, shared by all), a rest variance and means far from
// the origin (so that ‖x‖² ≫ ‖x − αμ_k‖² near data at small σ).
func imageLikeMixture(t *testing.T, rng *rand.Rand, ranks []int) *Gaussian {
	t.Helper()
	const d = 48
	comps := make([]Component, len(ranks))
	labels := make([]int, len(ranks))
	for k, r := range ranks {
		nIdle := min(3*(k%4), d-r)
		idle := make([]int, nIdle)
		for j := range idle {
			idle[j] = j
		}
		basis := randDense(rng, d, r, 1)
		for j := range idle {
			for l := 0; l < r; l++ {
				basis.Set(j, l, 0)
			}
		}
		var qr mat.QR
		qr.Factorize(basis)
		u := mat.NewDense(d, r, nil)
		var q mat.Dense
		qr.QTo(&q)
		u.Copy(q.Slice(0, d, 0, r))
		for j := range idle {
			for l := 0; l < r; l++ {
				u.Set(j, l, 0)
			}
		}
		mean := make([]float64, d)
		for j := range mean {
			mean[j] = 50 + 0.5*rng.NormFloat64()
		}
		for _, j := range idle {
			mean[j] = -1
		}
		lam := make([]float64, r)
		for j := range lam {
			lam[j] = 0.5 * rng.Float64()
		}
		comps[k] = Component{Mean: mean, Basis: u, Lambda: lam, Rest: 0.01 * rng.Float64(), Idle: idle,
			IdleVar: []float64{0, 1e-6}[k%2], Weight: 0.5 + rng.Float64()}
		labels[k] = k % 3
	}
	g, err := NewLowRank(comps)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.SetClasses(labels); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestOneProductEvalMatchesTheDirectForm: Eval's projections and distances
// from allComponents' products (in one chunk of rows or several) give every
// output of the per-component direct form to 1e-10 relative, at small σ (where the centred expansion
// of ‖x − αμ_k‖² must not cancel) and near data, for equal and mixed
// ranks (one full), labelled mixtures and their restrictions.
func TestOneProductEvalMatchesTheDirectForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	equal := imageLikeMixture(t, rng, []int{5, 5, 5, 5, 5, 5, 5, 5, 5})
	mixed := imageLikeMixture(t, rng, []int{1, 7, 48, 3, 12, 2})
	restricted, err := equal.Restrict(1)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.DefaultVP()
	wants := []What{LogProb, Score, Denoiser, SecondMoment, Trace, MatVec, Full, LogProb | Score | Trace | Denoiser}
	for name, g := range map[string]*Gaussian{"equal ranks": equal, "mixed ranks": mixed, "restricted": restricted} {
		for _, tt := range []float64{1e-3, 0.01, 0.1, 0.5, 0.99} {
			c, err := schedule.At(s, tt)
			if err != nil {
				t.Fatal(err)
			}
			x := nearData(rng, g, 70, c)
			v := randDense(rng, 70, g.Dim(), 1)
			for _, want := range wants {
				q := Query{At: c, X: x, V: v, Want: want}
				ref, err := g.eval(q, 0)
				if err != nil {
					t.Fatal(err)
				}
				// All 70 rows in one chunk, then chunks of gaussBlock rows.
				for _, values := range []int{projectedValues, 1} {
					got, err := g.eval(q, values)
					if err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("%s t=%g want=%b chunk values %d", name, tt, want, values)
					compareResults(t, where, got, ref)
				}
			}
		}
	}
}

// nearData draws b queries α x₀ + σ ε with x₀ a component's mean plus a
// small perturbation, or (every fourth) farther out, or (every fourth) a
// midpoint of two means, where components compete.
func nearData(rng *rand.Rand, g *Gaussian, b int, c schedule.Coefficients) *mat.Dense {
	d := g.Dim()
	x := mat.NewDense(b, d, nil)
	for i := 0; i < b; i++ {
		mu := g.means.RawRowView(rng.IntN(g.Components()))
		nu := g.means.RawRowView(rng.IntN(g.Components()))
		far, mid := 0.05, 0.0
		switch i % 4 {
		case 0:
			far = 2
		case 1:
			mid = 0.5
		}
		for j := range d {
			x0 := (1-mid)*mu[j] + mid*nu[j] + far*rng.NormFloat64()
			x.Set(i, j, c.Alpha*x0+c.Sigma*rng.NormFloat64())
		}
	}
	return x
}

// compareResults fails where an output of got differs from ref by more
// than 1e-10 relative (per row; scalars relative to the batch's largest).
func compareResults(t *testing.T, where string, got, ref *Result) {
	t.Helper()
	const tol = 1e-10
	rows := func(what string, a, b *mat.Dense) {
		if (a == nil) != (b == nil) {
			t.Fatalf("%s: %s present in one result only", where, what)
		}
		if a == nil {
			return
		}
		n, _ := b.Dims()
		for i := 0; i < n; i++ {
			if e := relErr(a.RawRowView(i), b.RawRowView(i)); !(e <= tol) {
				t.Errorf("%s: %s row %d differs by %.3g relative", where, what, i, e)
			}
		}
	}
	scalars := func(what string, a, b []float64) {
		if (a == nil) != (b == nil) {
			t.Fatalf("%s: %s present in one result only", where, what)
		}
		scale := 0.0
		for _, v := range b {
			scale = math.Max(scale, math.Abs(v))
		}
		for i := range b {
			if e := math.Abs(a[i]-b[i]) / scale; !(e <= tol) {
				t.Errorf("%s: %s[%d] = %v, want %v (%.3g relative)", where, what, i, a[i], b[i], e)
			}
		}
	}
	scalars("log q", got.LogProb, ref.LogProb)
	scalars("second moment", got.SecondMoment, ref.SecondMoment)
	scalars("trace", got.Trace, ref.Trace)
	rows("score", got.Score, ref.Score)
	rows("denoiser", got.Denoiser, ref.Denoiser)
	rows("F v", got.MatVec, ref.MatVec)
	if len(got.Fisher) != len(ref.Fisher) {
		t.Fatalf("%s: %d Fisher matrices, want %d", where, len(got.Fisher), len(ref.Fisher))
	}
	for i := range ref.Fisher {
		a, b := got.Fisher[i].RawSymmetric().Data, ref.Fisher[i].RawSymmetric().Data
		if e := relErr(a, b); !(e <= tol) {
			t.Errorf("%s: F row %d differs by %.3g relative", where, i, e)
		}
	}
}
