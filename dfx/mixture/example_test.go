package mixture_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// The exact diffusion Fisher F = −∇²log q_t of the empirical distribution
// of two points (paper Prop. analytic_dirac): its trace, F·v and the full
// matrix at one noisy point. Across the points' line F is reduced by the
// posterior variance; along the other axis it is the Gaussian 1/σ².
func ExampleDirac() {
	y := mat.NewDense(2, 2, []float64{-1, 0, 1, 0})
	m, err := mixture.NewDirac(y, nil)
	if err != nil {
		panic(err)
	}
	at, err := schedule.At(schedule.DefaultVP(), 0.3)
	if err != nil {
		panic(err)
	}
	x := mat.NewDense(1, 2, []float64{0.2, 0.1})
	v := mat.NewDense(1, 2, []float64{1, 0})
	r, err := m.Eval(mixture.Query{At: at, X: x, V: v, Want: mixture.Trace | mixture.MatVec | mixture.Full | mixture.Denoiser})
	if err != nil {
		panic(err)
	}
	fmt.Printf("α = %.3f, σ = %.3f\n", at.Alpha, at.Sigma)
	fmt.Printf("denoiser ȳ = %.3f\n", mat.Row(nil, 0, r.Denoiser))
	fmt.Printf("tr F = %.3f\n", r.Trace[0])
	fmt.Printf("F v = %.3f\n", mat.Row(nil, 0, r.MatVec))
	f := r.Fisher[0]
	fmt.Printf("diag F = [%.3f %.3f], 1/σ² = %.3f\n", f.At(0, 0), f.At(1, 1), 1/(at.Sigma*at.Sigma))
	// Output:
	// α = 0.630, σ = 0.777
	// denoiser ȳ = [0.206 0.000]
	// tr F = 2.271
	// F v = [0.615 0.000]
	// diag F = [0.615 1.657], 1/σ² = 1.657
}

// One Gaussian N(μ, Σ) diffuses to q_t = N(αμ, C), C = α²Σ + σ²I, so its
// log-density is −(d/2) log 2π − ½ log det C − ½ DᵀC⁻¹D with D = x − αμ
// (by a Cholesky factor of C) and its Fisher is C⁻¹ whatever x is.
func ExampleNewGaussian() {
	mu := mat.NewDense(1, 2, []float64{1, -1})
	sigma := mat.NewSymDense(2, []float64{0.5, 0.2, 0.2, 0.3})
	g, err := mixture.NewGaussian(mu, []*mat.SymDense{sigma}, nil)
	if err != nil {
		panic(err)
	}
	c, _ := schedule.At(schedule.DefaultVP(), 0.2)
	x := mat.NewDense(1, 2, []float64{0.4, 0.1})
	r, err := g.Eval(mixture.Query{At: c, X: x, Want: mixture.LogProb | mixture.Full})
	if err != nil {
		panic(err)
	}
	cov := mat.NewSymDense(2, nil)
	cov.ScaleSym(c.Alpha*c.Alpha, sigma)
	for i := range 2 {
		cov.SetSym(i, i, cov.At(i, i)+c.Sigma*c.Sigma)
	}
	var chol mat.Cholesky
	if !chol.Factorize(cov) {
		panic("C is not positive definite")
	}
	dx := mat.NewVecDense(2, []float64{0.4 - c.Alpha*1, 0.1 - c.Alpha*-1})
	var sol mat.VecDense
	if err := chol.SolveVecTo(&sol, dx); err != nil {
		panic(err)
	}
	closed := -math.Log(2*math.Pi) - 0.5*chol.LogDet() - 0.5*mat.Dot(dx, &sol)
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		panic(err)
	}
	fmt.Printf("log q_t = %.6f (closed form %.6f)\n", r.LogProb[0], closed)
	for i := range 2 {
		fmt.Printf("row %d of F %.4f, of C⁻¹ %.4f\n", i, mat.Row(nil, i, r.Fisher[0]), mat.Row(nil, i, &inv))
	}
	// Output:
	// log q_t = -2.389799 (closed form -2.389799)
	// row 0 of F [1.5658 -0.3824], of C⁻¹ [1.5658 -0.3824]
	// row 1 of F [-0.3824 1.9482], of C⁻¹ [-0.3824 1.9482]
}

// The Fisher is the negative Hessian of log q_t (Prop. analytic_dirac):
// tr F against −Σⱼ ∂²log q_t/∂xⱼ² by central second differences of the
// exact log-density of a three-point mixture.
func ExampleMixture_traceIsMinusLaplacian() {
	m, err := mixture.NewDirac(mat.NewDense(3, 2, []float64{0, 0, 1, 1, -1, 2}), nil)
	if err != nil {
		panic(err)
	}
	c, _ := schedule.At(schedule.DefaultVP(), 0.4)
	x := []float64{0.3, 0.5}
	logq := func(p []float64) float64 {
		r, err := m.Eval(mixture.Query{At: c, X: mat.NewDense(1, 2, p), Want: mixture.LogProb})
		if err != nil {
			panic(err)
		}
		return r.LogProb[0]
	}
	const h = 1e-4
	lap := 0.0
	for j := range x {
		up, down := append([]float64(nil), x...), append([]float64(nil), x...)
		up[j] += h
		down[j] -= h
		lap += (logq(up) - 2*logq(x) + logq(down)) / (h * h)
	}
	r, _ := m.Eval(mixture.Query{At: c, X: mat.NewDense(1, 2, x), Want: mixture.Trace})
	fmt.Printf("tr F = %.5f, −Δ log q_t = %.5f\n", r.Trace[0], -lap)
	// Output:
	// tr F = 2.11096, −Δ log q_t = 2.11096
}

// Tweedie's formula: the score is −(x − α ȳ)/σ², with ȳ the denoiser
// E[x₀ | x_t], the posterior mean of the data points.
func ExampleMixture_tweedie() {
	m, _ := mixture.NewDirac(mat.NewDense(2, 2, []float64{1, 0, 0, 2}), nil)
	c, _ := schedule.At(schedule.DefaultVE(), 0.3)
	x := mat.NewDense(1, 2, []float64{0.2, 0.9})
	r, err := m.Eval(mixture.Query{At: c, X: x, Want: mixture.Score | mixture.Denoiser})
	if err != nil {
		panic(err)
	}
	tw := make([]float64, 2)
	floats.AddScaledTo(tw, x.RawRowView(0), -c.Alpha, r.Denoiser.RawRowView(0))
	floats.Scale(-1/(c.Sigma*c.Sigma), tw)
	fmt.Printf("score %.4f\n−(x − αȳ)/σ² %.4f\n", r.Score.RawRowView(0), tw)
	// Output:
	// score [-11.9242 66.0875]
	// −(x − αȳ)/σ² [-11.9242 66.0875]
}

// Prop. trace_matching: tr F = d/σ² − (α²/σ⁴)(E[‖x₀‖² | x_t] − ‖ȳ‖²), the
// identity DF-TM learns its scalar from.
func ExampleMixture_traceMatching() {
	m, _ := mixture.NewDirac(mat.NewDense(3, 3, []float64{1, 0, 0, 0, 1, 1, -1, 0.5, 0}), []float64{1, 2, 1})
	c, _ := schedule.At(schedule.DefaultVP(), 0.25)
	x := mat.NewDense(1, 3, []float64{0.1, 0.4, 0.2})
	r, err := m.Eval(mixture.Query{At: c, X: x, Want: mixture.Trace | mixture.SecondMoment | mixture.Denoiser})
	if err != nil {
		panic(err)
	}
	ybar := r.Denoiser.RawRowView(0)
	s2, a2 := c.Sigma*c.Sigma, c.Alpha*c.Alpha
	closed := 3/s2 - a2/(s2*s2)*(r.SecondMoment[0]-floats.Dot(ybar, ybar))
	fmt.Printf("tr F = %.6f, trace-matching identity %.6f\n", r.Trace[0], closed)
	// Output:
	// tr F = 4.343327, trace-matching identity 4.343327
}

// Nearest returns the data points closest to each query: the atoms that
// dominate a Dirac mixture's posterior as σ → 0.
func ExampleDirac_Nearest() {
	m, _ := mixture.NewDirac(mat.NewDense(4, 2, []float64{0, 0, 1, 0, 0, 1, 3, 3}), nil)
	idx, dist, err := m.Nearest(mat.NewDense(2, 2, []float64{0.9, 0.2, 2, 2}), 2)
	if err != nil {
		panic(err)
	}
	for q := range idx {
		fmt.Printf("query %d: points %v at distances %.4f\n", q, idx[q], dist[q])
	}
	// Output:
	// query 0: points [1 0] at distances [0.2236 0.9220]
	// query 1: points [3 1] at distances [1.4142 2.2361]
}

// A low-rank component U diag(λ) Uᵀ + ρ(I − UUᵀ) is the same Gaussian as its
// full covariance: the two mixtures give the same log-density and trace.
func ExampleNewLowRank() {
	u := mat.NewDense(3, 1, []float64{1 / math.Sqrt2, 1 / math.Sqrt2, 0})
	low, err := mixture.NewLowRank([]mixture.Component{{Mean: []float64{0, 1, 0}, Basis: u, Lambda: []float64{2}, Rest: 0.1, Weight: 1}})
	if err != nil {
		panic(err)
	}
	var full mat.SymDense
	full.SymOuterK(2-0.1, u)
	for i := range 3 {
		full.SetSym(i, i, full.At(i, i)+0.1)
	}
	dense, err := mixture.NewGaussian(mat.NewDense(1, 3, []float64{0, 1, 0}), []*mat.SymDense{&full}, nil)
	if err != nil {
		panic(err)
	}
	c, _ := schedule.At(schedule.DefaultVP(), 0.1)
	x := mat.NewDense(1, 3, []float64{0.5, 0.2, -0.3})
	for _, g := range []*mixture.Gaussian{low, dense} {
		r, err := g.Eval(mixture.Query{At: c, X: x, Want: mixture.LogProb | mixture.Trace})
		if err != nil {
			panic(err)
		}
		fmt.Printf("rank %d: log q_t = %.6f, tr F = %.6f\n", g.Rank(0), r.LogProb[0], r.Trace[0])
	}
	// Output:
	// rank 1: log q_t = -3.684016, tr F = 10.871495
	// rank 3: log q_t = -3.684016, tr F = 10.871495
}

// Fit recovers two well-separated clusters by k-means: each component's
// weight is its share of the rows and its mean that of its rows.
func ExampleFit() {
	rng := rand.New(rand.NewPCG(3, 4))
	data := mat.NewDense(400, 2, nil)
	for i := range 400 {
		cx := -3.0
		if i%4 == 0 {
			cx = 3
		}
		data.SetRow(i, []float64{cx + 0.5*rng.NormFloat64(), 0.5 * rng.NormFloat64()})
	}
	g, info, err := mixture.Fit(data, nil, mixture.FitOptions{Components: 2, Seed: 1})
	if err != nil {
		panic(err)
	}
	for k := range g.Components() {
		cp := g.Component(k)
		fmt.Printf("component: %d rows, weight %.2f, mean x = %.1f, |mean y| < 0.1: %t\n",
			info.Sizes[k], cp.Weight, cp.Mean[0], math.Abs(cp.Mean[1]) < 0.1)
	}
	// Output:
	// component: 300 rows, weight 0.75, mean x = -3.0, |mean y| < 0.1: true
	// component: 100 rows, weight 0.25, mean x = 3.0, |mean y| < 0.1: true
}

// Exact samples of a Gaussian mixture: their mean approaches Σ π_k μ_k.
func ExampleGaussian_Sample() {
	means := mat.NewDense(2, 1, []float64{-2, 2})
	g, _ := mixture.NewGaussian(means, []*mat.SymDense{mat.NewSymDense(1, []float64{0.25}), mat.NewSymDense(1, []float64{0.25})}, []float64{0.25, 0.75})
	x, err := g.Sample(rand.New(rand.NewPCG(1, 1)), 20000, -1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("sample mean %.2f, Σ π_k μ_k = %.2f\n", stat.Mean(mat.Col(nil, 0, x), nil), 0.25*-2+0.75*2)
	// Output:
	// sample mean 1.02, Σ π_k μ_k = 1.00
}

// Restrict is the class-conditional mixture of a labelled fit: the
// components of one label, their weights renormalised.
func ExampleGaussian_Restrict() {
	means := mat.NewDense(3, 1, []float64{-2, 0, 2})
	one := mat.NewSymDense(1, []float64{1})
	g, _ := mixture.NewGaussian(means, []*mat.SymDense{one, one, one}, []float64{0.2, 0.3, 0.5})
	if err := g.SetClasses([]int{0, 1, 1}); err != nil {
		panic(err)
	}
	r, err := g.Restrict(1)
	if err != nil {
		panic(err)
	}
	for k := range r.Components() {
		cp := r.Component(k)
		fmt.Printf("mean %.0f, weight %.3f\n", cp.Mean[0], cp.Weight)
	}
	// Output:
	// mean 0, weight 0.375
	// mean 2, weight 0.625
}
