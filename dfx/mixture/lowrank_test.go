package mixture

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// lowRankCase is a 3-component mixture in d = 7 in the low-rank form (rank
// 2, a rest, idle coordinates) and the same mixture with its covariances
// written out in full: Σ = U diag(λ) Uᵀ + ρ P + ν I_S.
func lowRankCase(t *testing.T) (*Gaussian, *Gaussian) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	const d, r = 7, 2
	idles := [][]int{{0, 6}, nil, {3}}
	var comps []Component
	means := mat.NewDense(3, d, nil)
	var covs []*mat.SymDense
	for k, idle := range idles {
		isIdle := map[int]bool{}
		for _, j := range idle {
			isIdle[j] = true
		}
		// Orthonormal basis on the active coordinates (Gram–Schmidt).
		u := mat.NewDense(d, r, nil)
		for l := 0; l < r; l++ {
			col := make([]float64, d)
			for j := range col {
				if !isIdle[j] {
					col[j] = rng.NormFloat64()
				}
			}
			for p := 0; p < l; p++ {
				pr := 0.0
				for j := range col {
					pr += col[j] * u.At(j, p)
				}
				for j := range col {
					col[j] -= pr * u.At(j, p)
				}
			}
			n := math.Sqrt(dot(col, col))
			for j := range col {
				u.Set(j, l, col[j]/n)
			}
		}
		mean := make([]float64, d)
		for j := range mean {
			mean[j] = rng.NormFloat64()
		}
		c := Component{Mean: mean, Basis: u, Lambda: []float64{0.3 + 0.2*float64(k), 0.8}, Rest: 0.05 * float64(k+1), Idle: idle, IdleVar: []float64{0.2, 1e-4, 1e-4}[k], Weight: float64(k + 1)}
		comps = append(comps, c)
		means.SetRow(k, mean)
		cov := mat.NewSymDense(d, nil)
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				v := 0.0
				for l := 0; l < r; l++ {
					v += u.At(i, l) * u.At(j, l) * (c.Lambda[l] - c.Rest)
				}
				if i == j {
					if isIdle[i] {
						v += c.IdleVar
					} else {
						v += c.Rest
					}
				}
				cov.SetSym(i, j, v)
			}
		}
		covs = append(covs, cov)
	}
	low, err := NewLowRank(comps)
	if err != nil {
		t.Fatal(err)
	}
	full, err := NewGaussian(means, covs, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	return low, full
}

// TestLowRankEqualsItsFullCovariance: every output of the low-rank form
// (rest and idle coordinates) equals that of the same covariances in full.
func TestLowRankEqualsItsFullCovariance(t *testing.T) {
	low, full := lowRankCase(t)
	s := schedule.DefaultVP()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tt := range []float64{1e-4, 0.05, 0.4, 1} {
		co, err := schedule.At(s, tt)
		if err != nil {
			t.Fatal(err)
		}
		const b = 70 // more than one block of rows
		x, v := mat.NewDense(b, 7, nil), mat.NewDense(b, 7, nil)
		for i := 0; i < b; i++ {
			for j := 0; j < 7; j++ {
				x.Set(i, j, co.Alpha*rng.NormFloat64()+co.Sigma*rng.NormFloat64())
				v.Set(i, j, rng.NormFloat64())
			}
		}
		q := Query{At: co, X: x, V: v, Want: LogProb | Score | Denoiser | SecondMoment | Trace | MatVec | Full}
		a, err := low.Eval(q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := full.Eval(q)
		if err != nil {
			t.Fatal(err)
		}
		rel := func(name string, got, ref float64) {
			if e := math.Abs(got-ref) / (1 + math.Abs(ref)); e > 1e-8 {
				t.Errorf("t = %g: %s = %.12g, full covariance gives %.12g", tt, name, got, ref)
			}
		}
		for i := 0; i < b; i++ {
			rel("log q", a.LogProb[i], want.LogProb[i])
			rel("E‖x₀‖²", a.SecondMoment[i], want.SecondMoment[i])
			rel("tr F", a.Trace[i]*co.Sigma*co.Sigma, want.Trace[i]*co.Sigma*co.Sigma)
			for j := 0; j < 7; j++ {
				rel("score", a.Score.At(i, j)*co.Sigma, want.Score.At(i, j)*co.Sigma)
				rel("denoiser", a.Denoiser.At(i, j), want.Denoiser.At(i, j))
				rel("F v", a.MatVec.At(i, j)*co.Sigma*co.Sigma, want.MatVec.At(i, j)*co.Sigma*co.Sigma)
				for l := 0; l < 7; l++ {
					rel("F", a.Fisher[i].At(j, l)*co.Sigma*co.Sigma, want.Fisher[i].At(j, l)*co.Sigma*co.Sigma)
				}
			}
		}
	}
}

// TestFitRecoversAMixture: k-means on two well-separated Gaussians finds
// them (means and covariances within sampling error), with weights their
// shares; per class, the labels decide.
func TestFitRecoversAMixture(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	n, d := 4000, 3
	x := mat.NewDense(n, d, nil)
	labels := make([]int, n)
	for i := 0; i < n; i++ {
		c := 0
		if i%4 == 0 {
			c = 1
		}
		labels[i] = c
		for j := 0; j < d; j++ {
			x.Set(i, j, 10*float64(c)+(0.5+0.5*float64(j))*rng.NormFloat64())
		}
	}
	for _, per := range []bool{false, true} {
		g, _, err := Fit(x, labels, FitOptions{Components: map[bool]int{false: 2, true: 1}[per], PerClass: per, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2; k++ {
			c := g.Component(k)
			big := c.Mean[0] > 5
			wantW := 0.75
			if big {
				wantW = 0.25
			}
			if math.Abs(c.Weight-wantW) > 1e-9 {
				t.Errorf("per-class %v: component %d weight %g, want %g", per, k, c.Weight, wantW)
			}
			for j, l := range c.Lambda { // ascending: the std devs 0.5, 1, 1.5 squared
				want := math.Pow(0.5+0.5*float64(j), 2)
				if math.Abs(l-want) > 0.15*want {
					t.Errorf("per-class %v: component %d variance %d = %g, want ≈ %g", per, k, j, l, want)
				}
			}
		}
	}
}

// TestSampleMatchesTheMixtureMoments: exact samples of the low-rank form
// (rest and idle coordinates) have the mixture's mean and covariance.
func TestSampleMatchesTheMixtureMoments(t *testing.T) {
	low, full := lowRankCase(t)
	const n, d = 200000, 7
	x, err := low.Sample(rand.New(rand.NewPCG(1, 2)), n, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Moments of the full-covariance twin: m = Σ π μ, C = Σ π (Σ_k + μμᵀ) − m mᵀ.
	m := make([]float64, d)
	c := mat.NewSymDense(d, nil)
	for k := 0; k < full.Components(); k++ {
		cp := full.Component(k)
		cov := mat.NewDense(d, d, nil)
		cov.Mul(cp.Basis, mat.NewDiagDense(len(cp.Lambda), cp.Lambda))
		cov.Mul(cov, cp.Basis.T())
		for i := 0; i < d; i++ {
			m[i] += cp.Weight * cp.Mean[i]
			for j := i; j < d; j++ {
				c.SetSym(i, j, c.At(i, j)+cp.Weight*(cov.At(i, j)+cp.Mean[i]*cp.Mean[j]))
			}
		}
	}
	sm := make([]float64, d)
	sc := mat.NewSymDense(d, nil)
	for r := 0; r < n; r++ {
		row := x.RawRowView(r)
		for i := 0; i < d; i++ {
			sm[i] += row[i] / n
			for j := i; j < d; j++ {
				sc.SetSym(i, j, sc.At(i, j)+row[i]*row[j]/n)
			}
		}
	}
	for i := 0; i < d; i++ {
		if math.Abs(sm[i]-m[i]) > 0.02 {
			t.Errorf("sample mean[%d] = %.4f, mixture %.4f", i, sm[i], m[i])
		}
		for j := i; j < d; j++ {
			want := c.At(i, j) - m[i]*m[j]
			got := sc.At(i, j) - sm[i]*sm[j]
			if math.Abs(got-want) > 0.012*(1+math.Abs(want)) {
				t.Errorf("sample covariance[%d,%d] = %.4f, mixture %.4f", i, j, got, want)
			}
		}
	}
}

// TestNearestMatchesBruteForce: Dirac.Nearest's k nearest atoms and
// distances are those of an exhaustive search.
func TestNearestMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n, d, b, k := 5000, 9, 300, 4
	y, x := mat.NewDense(n, d, nil), mat.NewDense(b, d, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			y.Set(i, j, rng.NormFloat64())
		}
	}
	for i := 0; i < b; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	m, err := NewDirac(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	idx, dist, err := m.Nearest(x, k)
	if err != nil {
		t.Fatal(err)
	}
	for q := 0; q < b; q++ {
		all := make([]float64, n)
		for i := range all {
			all[i] = math.Sqrt(sqDist(x.RawRowView(q), y.RawRowView(i), 1))
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, c int) bool { return all[order[a]] < all[order[c]] })
		for i := 0; i < k; i++ {
			if idx[q][i] != order[i] || math.Abs(dist[q][i]-all[order[i]]) > 1e-12 {
				t.Fatalf("query %d, neighbour %d: got %d at %g, want %d at %g", q, i, idx[q][i], dist[q][i], order[i], all[order[i]])
			}
		}
	}
}

// TestFitKeepsTheRankOnDegenerateClusters: a cluster of one row (every
// coordinate idle) still gets a rank-r component, so that every component
// has the same rank (as an ε-network's skip needs) and nothing panics;
// ρ is the mean of the dropped eigenvalues and the idle coordinates' ν
// their mean variance.
func TestFitKeepsTheRankOnDegenerateClusters(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	n, d := 300, 6
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n-1; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, rng.NormFloat64()*float64(j+1)*0.1)
		}
		x.Set(i, 5, 1e-4*rng.Float64()) // idle everywhere
	}
	for j := 0; j < d; j++ {
		x.Set(n-1, j, 100) // an outlier: a cluster of its own
	}
	g, _, err := Fit(x, nil, FitOptions{Components: 2, Rank: 2, Idle: 1e-4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < g.Components(); k++ {
		c := g.Component(k)
		if g.Rank(k) != 2 {
			t.Errorf("component %d has rank %d, want 2", k, g.Rank(k))
		}
		if c.Weight > 0.5 { // the big cluster: coordinate 5 idle, ρ the mean of the 3 dropped variances
			if len(c.Idle) != 1 || c.Idle[0] != 5 {
				t.Errorf("big component's idle coordinates %v, want [5]", c.Idle)
			}
			if want := (0.01 + 0.04 + 0.09) / 3; math.Abs(c.Rest-want) > 0.25*want {
				t.Errorf("big component's rest variance %g, want ≈ %g", c.Rest, want)
			}
		}
	}
}

// countdownCtx is a context whose Err turns Canceled after n calls.
type countdownCtx struct {
	context.Context
	n, calls int
}

func (c *countdownCtx) Err() error {
	c.calls++
	if c.calls > c.n {
		return context.Canceled
	}
	return nil
}

// TestFitContextStopsInsideTheFit: a context cancelled during the fit
// (after its first few checks) stops it with the context's error, before
// the k-means or the components are done; an uncancelled one fits.
func TestFitContextStopsInsideTheFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n, d := 600, 4
	x := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			x.Set(i, j, rng.NormFloat64()+float64(i%6))
		}
	}
	opt := FitOptions{Components: 6, Iters: 25, Seed: 1}
	whole := &countdownCtx{Context: context.Background(), n: 1 << 30}
	g, info, err := FitContext(whole, x, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if want := info.Iterations[0] + g.Components(); whole.calls != want {
		t.Fatalf("a whole fit checked its context %d times, want %d: once per k-means iteration (%d) and per component (%d)", whole.calls, want, info.Iterations[0], g.Components())
	}
	for _, after := range []int{0, 1, whole.calls - 1} { // at the start, in the k-means, at the last component
		ctx := &countdownCtx{Context: context.Background(), n: after}
		if _, _, err := FitContext(ctx, x, nil, opt); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d of %d checks: %v, want context.Canceled", after, whole.calls, err)
		}
	}
}
