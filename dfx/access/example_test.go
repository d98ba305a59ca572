package access_test

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend" // GoMLX's Go backend
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
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
