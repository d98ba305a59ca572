package mixture_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

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
