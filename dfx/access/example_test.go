package access_test

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend" // GoMLX's Go backend
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// exactNet is a 4-point Dirac mixture in d = 3 whose exact ε, t and ν serve
// as the "network" (Mixture.Net), and two queries at t = 0.3 of the VP
// schedule. Its outputs are deterministic, so the examples print them.
func exactNet() (*access.Mixture, *mat.Dense, schedule.Coefficients) {
	backend, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		panic(err)
	}
	y := mat.NewDense(4, 3, []float64{
		1, 0, 0,
		0, 1, 0,
		-1, 0, 0.5,
		0, -1, -0.5,
	})
	mix, err := access.NewMixture(backend, schedule.DefaultVP(), dtypes.Float64, y)
	if err != nil {
		panic(err)
	}
	x := mat.NewDense(2, 3, []float64{
		0.4, 0.3, 0,
		-0.2, -0.5, -0.1,
	})
	c, err := schedule.At(schedule.DefaultVP(), 0.3)
	if err != nil {
		panic(err)
	}
	return mix, x, c
}

func printRow(v []float64) {
	for i, x := range v {
		if i > 0 {
			fmt.Print(" ")
		}
		fmt.Printf("%.4f", x)
	}
	fmt.Println()
}

// The exact trace of the network's Fisher by d VJPs (eq. nll_VJP) equals the
// mixture's closed form when the network is the exact score.
func ExampleVJPTrace() {
	mix, x, c := exactNet()
	vjp, err := access.NewVJPTrace(mix.Net(), 0)
	if err != nil {
		panic(err)
	}
	tr, err := vjp.Trace(c, x)
	if err != nil {
		panic(err)
	}
	exact, _ := mix.Trace(c, x)
	printRow(tr)
	printRow(exact)
	// Output:
	// 3.8806 3.7820
	// 3.8806 3.7820
}

// Hutchinson's estimate with K = 4 Rademacher probes per query; the same
// seed gives the same estimate.
func ExampleHutchinson() {
	mix, x, c := exactNet()
	h, err := access.NewHutchinson(mix.Net(), 4, access.Rademacher, 1)
	if err != nil {
		panic(err)
	}
	tr, err := h.Trace(c, x)
	if err != nil {
		panic(err)
	}
	printRow(tr)
	// Output:
	// 3.5849 4.0760
}

// Hutch++ with M = 6 matvecs per query in d = 3: a sketch of k = 2
// vectors, their exact trace, and Hutchinson on the deflated remainder.
func ExampleHutchPP() {
	mix, x, c := exactNet()
	h, err := access.NewHutchPP(mix.Net(), 6, 1)
	if err != nil {
		panic(err)
	}
	tr, err := h.Trace(c, x)
	if err != nil {
		panic(err)
	}
	printRow(tr)
	// Output:
	// 3.8625 5.2293
}

// DF-TM (eq. trace_appro) in one forward pass of ε and t: exact when the
// networks are exact.
func ExampleDFTM() {
	mix, x, c := exactNet()
	e, err := access.NewDFTM(mix.Net())
	if err != nil {
		panic(err)
	}
	tr, err := e.Trace(c, x)
	if err != nil {
		panic(err)
	}
	printRow(tr)
	// Output:
	// 3.8806 3.7820
}

// DF-EA (eq. EA_approx) applies the Fisher with the posterior second moment
// replaced by the endpoint's outer product x₀x₀ᵀ; here x₀ is the data point
// nearest each query, and the exact F v is printed below it.
func ExampleDFEA() {
	mix, x, c := exactNet()
	ea, err := access.NewDFEA(mix.Net())
	if err != nil {
		panic(err)
	}
	x0 := mat.NewDense(2, 3, []float64{
		1, 0, 0,
		0, -1, -0.5,
	})
	v := mat.NewDense(2, 3, []float64{
		1, 0, 0,
		0, 1, 0,
	})
	fv, err := ea.Apply(score.State{At: c, X: x, Endpoint: x0}, v)
	if err != nil {
		panic(err)
	}
	exact, _ := mix.Apply(score.State{At: c, X: x}, v)
	for q := range 2 {
		printRow(fv.RawRowView(q))
		printRow(exact.RawRowView(q))
	}
	// Output:
	// 0.6209 0.0396 -0.0019
	// 1.1538 0.0396 0.0773
	// 0.0177 0.6385 -0.5252
	// 0.0177 1.1374 -0.1973
}

// The host wrappers of a Net evaluate its networks on a batch.
func ExampleNet_DenoiserAt() {
	mix, x, c := exactNet()
	ybar, err := mix.Net().DenoiserAt(c, x)
	if err != nil {
		panic(err)
	}
	tn, err := mix.Net().TAt(c, x)
	if err != nil {
		panic(err)
	}
	for q := range 2 {
		printRow(ybar.RawRowView(q))
	}
	printRow(tn)
	// Output:
	// 0.2186 0.1665 -0.0080
	// -0.0645 -0.2529 -0.0677
	// 0.3590 0.3882
}

// exactRef is the float64 reference of exactNet's data: dfx/mixture's Dirac
// mixture of the same four points.
func exactRef() score.Exact {
	y := mat.NewDense(4, 3, []float64{1, 0, 0, 0, 1, 0, -1, 0, 0.5, 0, -1, -0.5})
	m, err := mixture.NewDirac(y, nil)
	if err != nil {
		panic(err)
	}
	return score.Exact{Mixture: m}
}

// The Fisher product by one VJP through the network, F v ≈ (1/σ) ∂⟨ε_θ, v⟩/∂x
// (eq. Adjoint_VJP), equals the mixture's closed form when ε_θ is exact.
func ExampleVJPMatVec() {
	mix, x, c := exactNet()
	op, err := access.NewVJPMatVec(mix.Net())
	if err != nil {
		panic(err)
	}
	v := mat.NewDense(2, 3, []float64{1, 0, 0, 0.5, -1, 2})
	fv, err := op.Apply(score.State{At: c, X: x}, v)
	if err != nil {
		panic(err)
	}
	exact, err := exactRef().Apply(score.State{At: c, X: x}, v)
	if err != nil {
		panic(err)
	}
	for q := range 2 {
		printRow(fv.RawRowView(q))
		printRow(exact.RawRowView(q))
	}
	// Output:
	// 1.1538 0.0396 0.0773
	// 1.1538 0.0396 0.0773
	// 0.8574 -1.5232 3.2357
	// 0.8574 -1.5232 3.2357
}

// OperatorMatrix turns an operator into its d×d matrix by one batched
// Apply on the basis vectors: the exact Fisher of the graph mixture is
// symmetric, its diagonal sums to the trace, and it equals dfx/mixture's.
func ExampleOperatorMatrix() {
	mix, x, c := exactNet()
	ms, err := access.OperatorMatrix(mix, score.State{At: c, X: x})
	if err != nil {
		panic(err)
	}
	ref, err := exactRef().Mixture.Eval(mixture.Query{At: c, X: x, Want: mixture.Full | mixture.Trace})
	if err != nil {
		panic(err)
	}
	f := ms[0]
	fmt.Printf("symmetric %t, tr = %.4f (closed form %.4f), equal to dfx/mixture's %t\n",
		mat.EqualApprox(f, f.T(), 1e-12), mat.Trace(f), ref.Trace[0], mat.EqualApprox(f, ref.Fisher[0], 1e-9))
	for i := range 3 {
		printRow(f.RawRowView(i))
	}
	// Output:
	// symmetric true, tr = 3.8806 (closed form 3.8806), equal to dfx/mixture's true
	// 1.1538 0.0396 0.0773
	// 0.0396 1.1538 -0.0894
	// 0.0773 -0.0894 1.5730
}

// DF-EA (eq. EA_approx) is exact on average over the posterior: the exact
// Fisher I/σ² − (α²/σ⁴)(Σ wᵢyᵢyᵢᵀ − ȳȳᵀ) is Σᵢ wᵢ F_EA(x̂₀ = yᵢ), so DF-EA
// with an endpoint drawn from the posterior is unbiased, and exact where
// the posterior sits on one point.
func ExampleDFEAApply() {
	ref := exactRef()
	y := ref.Mixture.(*mixture.Dirac).Data()
	c, _ := schedule.At(schedule.DefaultVP(), 0.3)
	x := mat.NewDense(1, 3, []float64{0.4, 0.3, 0})
	v := mat.NewDense(1, 3, []float64{1, -1, 0.5})
	ev, err := ref.Eval(c, x, score.WantDenoiser)
	if err != nil {
		panic(err)
	}
	// the posterior weights wᵢ ∝ exp(−‖x − αyᵢ‖²/(2σ²))
	w := make([]float64, 4)
	for i := range w {
		diff := make([]float64, 3)
		floats.AddScaledTo(diff, x.RawRowView(0), -c.Alpha, y.RawRowView(i))
		w[i] = -floats.Dot(diff, diff) / (2 * c.Sigma * c.Sigma)
	}
	floats.AddConst(-floats.LogSumExp(w), w)
	for i := range w {
		w[i] = math.Exp(w[i])
	}
	avg := make([]float64, 3)
	for i := range w {
		ea, err := access.DFEAApply(ev.Denoiser, mat.NewDense(1, 3, y.RawRowView(i)), v, c.Alpha, c.Sigma)
		if err != nil {
			panic(err)
		}
		floats.AddScaled(avg, w[i], ea.RawRowView(0))
	}
	exact, _ := ref.Apply(score.State{At: c, X: x}, v)
	fmt.Printf("weights %.4f\n", w)
	printRow(avg)
	printRow(exact.RawRowView(0))
	// Output:
	// weights [0.3643 0.3282 0.1457 0.1617]
	// 1.1529 -1.1589 0.9532
	// 1.1529 -1.1589 0.9532
}

// DFEAMatrix is the matrix DF-EA applies, I/σ² − (α²/σ⁴)(x̂₀x̂₀ᵀ − ȳȳᵀ):
// symmetric, and its product with v is DFEAApply's.
func ExampleDFEAMatrix() {
	c, _ := schedule.At(schedule.DefaultVP(), 0.3)
	x0, ybar, v := []float64{1, 0, 0}, []float64{0.2, 0.1, 0}, []float64{1, 2, 3}
	m := access.DFEAMatrix(c, x0, ybar)
	var mv mat.VecDense
	mv.MulVec(m, mat.NewVecDense(3, v))
	fv, err := access.DFEAApply(mat.NewDense(1, 3, ybar), mat.NewDense(1, 3, x0), mat.NewDense(1, 3, v), c.Alpha, c.Sigma)
	if err != nil {
		panic(err)
	}
	fmt.Println("symmetric:", mat.Equal(m, m.T()))
	printRow(mv.RawVector().Data)
	printRow(fv.RawRowView(0))
	// Output:
	// symmetric: true
	// 0.6560 3.3566 4.9696
	// 0.6560 3.3566 4.9696
}

// Centred DF-TM, tr F ≈ (d/σ²)(1 − ν_θ), is exact with the exact ν; so is
// the paper's DF-TM, from t_θ and ȳ_θ.
func ExampleDFTMCentred() {
	mix, x, c := exactNet()
	e, err := access.NewDFTMCentred(mix.Net())
	if err != nil {
		panic(err)
	}
	tr, err := e.Trace(c, x)
	if err != nil {
		panic(err)
	}
	nu, err := mix.Net().NuAt(c, x)
	if err != nil {
		panic(err)
	}
	exact, _ := exactRef().Trace(c, x)
	fmt.Printf("ν = %.4f\n", nu)
	printRow(tr)
	printRow(exact)
	// Output:
	// ν = [0.2191 0.2390]
	// 3.8806 3.7820
	// 3.8806 3.7820
}

// The DF-TM scalar t_θ's target is E[‖x₀‖² | x_t]/d (Prop. optimal_t): the
// exact network's TAt equals dfx/mixture's posterior second moment over d.
func ExampleNet_TAt() {
	mix, x, c := exactNet()
	tn, err := mix.Net().TAt(c, x)
	if err != nil {
		panic(err)
	}
	r, err := exactRef().Mixture.Eval(mixture.Query{At: c, X: x, Want: mixture.SecondMoment})
	if err != nil {
		panic(err)
	}
	floats.Scale(1.0/3, r.SecondMoment)
	printRow(tn)
	printRow(r.SecondMoment)
	// Output:
	// 0.3590 0.3882
	// 0.3590 0.3882
}

// DF-TM's error bound (α²/σ⁴)(d·δ₁ + δ₂(2‖ȳ‖ + δ₂)) grows like 1/σ⁴: the
// same error δ₁ = 10⁻³ in t_θ (d = 784, δ₂ = 0) allows a trace error of
// 0.07 near the prior and of 2·10⁴ at σ ≈ 0.08.
func ExampleDFTMErrorBound() {
	s := schedule.DefaultVP()
	for _, t := range []float64{0.5, 0.1, 0.02} {
		c, _ := schedule.At(s, t)
		fmt.Printf("σ = %.3f: bound %.4g\n", c.Sigma, access.DFTMErrorBound(784, c.Alpha, c.Sigma, 1e-3, 0, 1))
	}
	// Output:
	// σ = 0.960: bound 0.07309
	// σ = 0.322: bound 65.32
	// σ = 0.077: bound 2.192e+04
}

// A network as a score.Model: NetModel answers ε_θ natively, the score and
// the denoiser by Tweedie, and the trace from its estimator (DF-TM here);
// with the exact network they equal the mixture's.
func ExampleNetModel() {
	mix, x, c := exactNet()
	tm, err := access.NewDFTM(mix.Net())
	if err != nil {
		panic(err)
	}
	m := access.NetModel{Net: mix.Net(), Trace: tm}
	ev, err := m.Eval(c, x, score.WantScore|score.WantTrace)
	if err != nil {
		panic(err)
	}
	ref, err := exactRef().Eval(c, x, score.WantScore|score.WantTrace)
	if err != nil {
		panic(err)
	}
	printRow(ev.Score.RawRowView(0))
	printRow(ref.Score.RawRowView(0))
	printRow(ev.Trace)
	printRow(ref.Trace)
	// Output:
	// -0.4346 -0.3233 -0.0084
	// -0.4346 -0.3233 -0.0084
	// 3.8806 3.7820
	// 3.8806 3.7820
}

// TraceInChunks bounds the points of one estimator call; the estimate of a
// deterministic estimator does not depend on the chunking.
func ExampleTraceInChunks() {
	mix, x, c := exactNet()
	vjp, err := access.NewVJPTrace(mix.Net(), 0)
	if err != nil {
		panic(err)
	}
	whole, _ := access.TraceInChunks(vjp, c, x, 0)
	one, err := access.TraceInChunks(vjp, c, x, 1)
	if err != nil {
		panic(err)
	}
	printRow(whole)
	printRow(one)
	// Output:
	// 3.8806 3.7820
	// 3.8806 3.7820
}
