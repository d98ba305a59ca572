package likelihood_test

import (
	"fmt"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

// The NLL of two points under a 2-D Dirac mixture, integrating the exact
// score and trace from ε to T with RK4, against the closed form. The
// solver's error is tiny; what remains is the prior N(0, σ_T² I) standing
// in for q_T, whose mean is the data mean (0, 1), not 0.
func ExampleLogProb() {
	s := schedule.DefaultVE()
	m, _ := mixture.NewDirac(mat.NewDense(3, 2, []float64{0, 0, 1, 1, -1, 2}), nil)
	x := mat.NewDense(2, 2, []float64{0.01, -0.005, 1.002, 0.99})
	res, err := likelihood.LogProb(x, score.Exact{Mixture: m}, likelihood.Config{
		Schedule: s, Steps: 100, Solver: likelihood.RK4, EstimateError: true,
	})
	if err != nil {
		panic(err)
	}
	lo, _ := s.Interval()
	c, _ := schedule.At(s, lo)
	exact, _ := m.Eval(mixture.Query{At: c, X: x, Want: mixture.LogProb})
	bpd, _ := likelihood.BitsPerDim(res.LogProb, 2, nil)
	for i := range res.LogProb {
		fmt.Printf("log q = %.3f (exact %.3f, solver error %.0e), %.3f bits/dim\n",
			res.LogProb[i], exact.LogProb[i], res.SolverError[i], bpd[i])
	}
	// Output:
	// log q = 5.674 (exact 5.649, solver error 4e-06), -4.093 bits/dim
	// log q = 5.764 (exact 5.754, solver error 3e-06), -4.158 bits/dim
}
