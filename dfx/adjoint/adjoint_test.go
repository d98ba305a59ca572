package adjoint

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// gmm is a K-component Gaussian mixture in d dimensions with full random
// covariances A Aᵀ + 0.05 I and means at distance ≈ 2 from each other.
func gmm(t *testing.T, d, k int, seed uint64) (*mixture.Gaussian, *mat.Dense) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	means := mat.NewDense(k, d, nil)
	var covs []*mat.SymDense
	for c := range k {
		for j := range d {
			means.Set(c, j, 1.5*rng.NormFloat64())
		}
		a := mat.NewDense(d, d, nil)
		for i := range d {
			for j := range d {
				a.Set(i, j, 0.3*rng.NormFloat64())
			}
		}
		cov := mat.NewSymDense(d, nil)
		cov.SymOuterK(1, a)
		for i := range d {
			cov.SetSym(i, i, cov.At(i, i)+0.05)
		}
		covs = append(covs, cov)
	}
	w := make([]float64, k)
	for i := range w {
		w[i] = 1 + float64(i)
	}
	m, err := mixture.NewGaussian(means, covs, w)
	if err != nil {
		t.Fatal(err)
	}
	return m, means
}

// noisy draws b points of q_t roughly: α·(a mean + N(0, 0.5²)) + σ ε.
func noisy(s schedule.Schedule, means *mat.Dense, b int, tm float64, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 5))
	k, d := means.Dims()
	a, sg := s.Alpha(tm), s.Sigma(tm)
	x := mat.NewDense(b, d, nil)
	for i := range b {
		for j := range d {
			x.Set(i, j, a*(means.At(i%k, j)+0.5*rng.NormFloat64())+sg*rng.NormFloat64())
		}
	}
	return x
}

// lseLoss is L(x₀) = log Σⱼ exp(x₀ⱼ) + 0.1‖x₀ − c‖², smooth and not quadratic.
func lseLoss(c []float64) Loss {
	return func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		b, d := x0.Dims()
		loss, grad := make([]float64, b), mat.NewDense(b, d, nil)
		for i := range b {
			r, g := x0.RawRowView(i)[:d], grad.RawRowView(i)
			lse := floats.LogSumExp(r)
			loss[i] = lse
			for j := range d {
				dv := r[j] - c[j]
				loss[i] += 0.1 * dv * dv
				g[j] = math.Exp(r[j]-lse) + 0.2*dv
			}
		}
		return loss, grad, nil
	}
}

// endpointLoss is L(x̂₀(x)) per row by the same inner solve.
func endpointLoss(t *testing.T, g Guide, x *mat.Dense, tm float64, n int) []float64 {
	t.Helper()
	tr, err := g.Predict(x, tm, n)
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := g.Loss(tr.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestExactAdjointGradientMatchesFiniteDifferences checks the discrete
// adjoint with the exact Fisher against fourth-order central differences of
// L(x̂₀(x_t)) through the same inner DDIM solve: relative error ≤ 1e-5 per
// row, at two times and 1 and 5 inner steps, on a 3-component Gaussian
// mixture with full covariances in d = 6.
func TestExactAdjointGradientMatchesFiniteDifferences(t *testing.T) {
	const d, b, h = 6, 5, 1e-5
	m, means := gmm(t, d, 3, 1)
	s := schedule.DefaultVP()
	c := []float64{0.5, -0.3, 0.2, 0, 0.1, -0.4}
	g := Guide{Schedule: s, Model: score.Exact{Mixture: m}, Operator: score.Exact{Mixture: m}, Loss: lseLoss(c)}
	for _, tm := range []float64{0.3, 0.7} {
		x := noisy(s, means, b, tm, 7)
		for _, n := range []int{1, 5} {
			gr, err := g.Gradient(x, tm, n)
			if err != nil {
				t.Fatal(err)
			}
			fd := mat.NewDense(b, d, nil)
			for j := range d {
				shifted := func(k float64) []float64 {
					xs := mat.DenseCopyOf(x)
					for i := range b {
						xs.Set(i, j, x.At(i, j)+k*h)
					}
					return endpointLoss(t, g, xs, tm, n)
				}
				p1, m1, p2, m2 := shifted(1), shifted(-1), shifted(2), shifted(-2)
				for i := range b {
					fd.Set(i, j, (8*(p1[i]-m1[i])-(p2[i]-m2[i]))/(12*h))
				}
			}
			worst := 0.0
			for i := range b {
				gi, fi := gr.Grad.RawRowView(i), fd.RawRowView(i)
				diff := make([]float64, d)
				floats.SubTo(diff, gi, fi)
				e := floats.Norm(diff, 2) / floats.Norm(fi, 2)
				worst = math.Max(worst, e)
				if e > 1e-5 {
					t.Errorf("t=%g n=%d row %d: adjoint %v, finite differences %v (relative error %.2e)", tm, n, i, gi, fi, e)
				}
			}
			t.Logf("t=%g n=%d: worst relative error %.2e", tm, n, worst)
			if gr.ModelEvals != n || gr.OperatorCalls != n {
				t.Errorf("t=%g n=%d: counted %d model evaluations, %d operator calls", tm, n, gr.ModelEvals, gr.OperatorCalls)
			}
		}
	}
}

// TestInnerSolveIsExactForOneDataPoint pins the DDIM step itself: for a
// single data point y the PF-ODE keeps ε = (x − α y)/σ fixed and DDIM is
// exact, so x̂₀ = α(t_min) y + σ(t_min) ε for any number of inner steps.
func TestInnerSolveIsExactForOneDataPoint(t *testing.T) {
	y := mat.NewDense(1, 3, []float64{0.7, -1.2, 0.4})
	m, err := mixture.NewDirac(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.DefaultVP()
	lo, _ := s.Interval()
	g := Guide{Schedule: s, Model: score.Exact{Mixture: m}}
	tm := 0.6
	x := mat.NewDense(2, 3, []float64{0.3, 0.1, -0.5, -0.9, 0.8, 0.2})
	for _, n := range []int{1, 4} {
		tr, err := g.Predict(x, tm, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.States) != n+1 || len(tr.Denoisers) != n || tr.At[0].T != tm || tr.At[n].T != lo {
			t.Fatalf("n=%d: trajectory of %d states, %d denoisers, from %g to %g", n, len(tr.States), len(tr.Denoisers), tr.At[0].T, tr.At[n].T)
		}
		for i := range 2 {
			for j := range 3 {
				eps := (x.At(i, j) - s.Alpha(tm)*y.At(0, j)) / s.Sigma(tm)
				want := s.Alpha(lo)*y.At(0, j) + s.Sigma(lo)*eps
				if got := tr.Endpoint().At(i, j); math.Abs(got-want) > 1e-12 {
					t.Errorf("n=%d (%d,%d): x̂₀ = %.15g, want %.15g", n, i, j, got, want)
				}
				if got := tr.Denoisers[0].At(i, j); math.Abs(got-y.At(0, j)) > 1e-12 {
					t.Errorf("n=%d (%d,%d): ȳ = %.15g, want %.15g", n, i, j, got, y.At(0, j))
				}
			}
		}
	}
}
