package likelihood_test

import (
	"fmt"
	"math"
	"math/rand/v2"

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

// The likelihood of a Gaussian by the PF-ODE equals its closed form: data
// N(μ, s² I) in d = 2 has q_t = N(αμ, v_t I), v_t = α²s² + σ², and with the
// exact q_T as the prior (Config.Prior) only the solver's error remains.
func ExampleLogProb_gaussian() {
	s := schedule.DefaultVP()
	mu, s2 := []float64{1, -1}, 0.25
	cov := mat.NewSymDense(2, []float64{s2, 0, 0, s2})
	g, err := mixture.NewGaussian(mat.NewDense(1, 2, mu), []*mat.SymDense{cov}, nil)
	if err != nil {
		panic(err)
	}
	logN := func(x []float64, c schedule.Coefficients) float64 {
		v := c.Alpha*c.Alpha*s2 + c.Sigma*c.Sigma
		sq := 0.0
		for j := range x {
			sq += (x[j] - c.Alpha*mu[j]) * (x[j] - c.Alpha*mu[j])
		}
		return -math.Log(2*math.Pi*v) - sq/(2*v)
	}
	lo, hi := s.Interval()
	cT, _ := schedule.At(s, hi)
	prior := func(x *mat.Dense) ([]float64, error) {
		out := make([]float64, x.RawMatrix().Rows)
		for i := range out {
			out[i] = logN(x.RawRowView(i), cT)
		}
		return out, nil
	}
	x := mat.NewDense(2, 2, []float64{1.2, -0.7, 0.1, -1.5})
	res, err := likelihood.LogProb(x, score.Exact{Mixture: g}, likelihood.Config{Schedule: s, RTol: 1e-8, Prior: prior})
	if err != nil {
		panic(err)
	}
	c0, _ := schedule.At(s, lo)
	for i := range res.LogProb {
		fmt.Printf("log q = %.6f (closed form %.6f)\n", res.LogProb[i], logN(x.RawRowView(i), c0))
	}
	// Output:
	// log q = -0.711585 (closed form -0.711585)
	// log q = -2.571579 (closed form -2.571579)
}

// Bits per dimension: −log₂ p(x)/d, plus log₂ Levels − log₂(Hi − Lo) for
// dequantised discrete data (7 for 8-bit images in [−1, 1]).
func ExampleBitsPerDim() {
	q := &likelihood.Quantization{Levels: 256, Lo: -1, Hi: 1}
	logp := []float64{-1000}
	plain, _ := likelihood.BitsPerDim(logp, 784, nil)
	discrete, err := likelihood.BitsPerDim(logp, 784, q)
	if err != nil {
		panic(err)
	}
	fmt.Printf("offset %.0f bits; %.4f bpd continuous, %.4f bpd discrete (1000/(784 ln 2) + 7 = %.4f)\n",
		q.Offset(), plain[0], discrete[0], 1000/(784*math.Ln2)+7)
	// Output:
	// offset 7 bits; 1.8402 bpd continuous, 8.8402 bpd discrete (1000/(784 ln 2) + 7 = 8.8402)
}

// Dequantize maps integer codes to Lo + (Hi − Lo)(k + u)/Levels with
// u ~ U[0, 1): each code lands in its own bin; a code out of range is an error.
func ExampleQuantization_Dequantize() {
	q := likelihood.Quantization{Levels: 4, Lo: 0, Hi: 1}
	x, err := q.Dequantize(mat.NewDense(1, 4, []float64{0, 1, 2, 3}), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		panic(err)
	}
	for j, v := range x.RawRowView(0) {
		fmt.Printf("code %d → %.4f in [%.2f, %.2f)\n", j, v, float64(j)/4, float64(j+1)/4)
	}
	_, err = q.Dequantize(mat.NewDense(1, 1, []float64{4}), rand.New(rand.NewPCG(1, 1)))
	fmt.Println("code 4:", err != nil)
	// Output:
	// code 0 → 0.0851 in [0.00, 0.25)
	// code 1 → 0.4775 in [0.25, 0.50)
	// code 2 → 0.7072 in [0.50, 0.75)
	// code 3 → 0.9558 in [0.75, 1.00)
	// code 4: true
}

// The time grid of a fixed-step integration, increasing from the data's
// time up to T, in Config.Grid's spacing: on EDM (α = 1, σ = t) a log-σ grid
// puts the steps where the integrand changes, near the data.
func ExampleGrid() {
	s := schedule.DefaultEDM()
	for _, kind := range []string{schedule.GridUniform, schedule.GridLogSigma} {
		g, err := likelihood.Grid(likelihood.Config{Schedule: s, T0: 0.01, T1: 80, Grid: kind}, 4)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-8s %.4f\n", kind, g)
	}
	// Output:
	// uniform  [0.0100 20.0075 40.0050 60.0025 80.0000]
	// logsigma [0.0100 0.0946 0.8944 8.4590 80.0000]
}

// The NLL's convergence in the fixed step count: Euler's error shrinks like
// 1/N, RK4's far faster; EstimateError's step-halving estimate tracks it.
func ExampleConfig_solvers() {
	s := schedule.DefaultVP()
	v := mat.NewSymDense(1, []float64{0.1})
	m, _ := mixture.NewGaussian(mat.NewDense(2, 1, []float64{-1, 1}), []*mat.SymDense{v, v}, nil)
	x := mat.NewDense(1, 1, []float64{0.7})
	ref, err := likelihood.LogProb(x, score.Exact{Mixture: m}, likelihood.Config{Schedule: s, RTol: 1e-10})
	if err != nil {
		panic(err)
	}
	for _, solver := range []likelihood.Solver{likelihood.Euler, likelihood.RK4} {
		for _, n := range []int{50, 100} {
			r, err := likelihood.LogProb(x, score.Exact{Mixture: m}, likelihood.Config{Schedule: s, Steps: n, Solver: solver, EstimateError: true})
			if err != nil {
				panic(err)
			}
			fmt.Printf("%-5s %3d steps: error %.1e, estimate %.1e\n", solver.Name(), n, math.Abs(r.LogProb[0]-ref.LogProb[0]), r.SolverError[0])
		}
	}
	// Output:
	// euler  50 steps: error 5.9e-02, estimate 5.4e-02
	// euler 100 steps: error 3.0e-02, estimate 2.9e-02
	// rk4    50 steps: error 2.2e-06, estimate 1.5e-06
	// rk4   100 steps: error 1.6e-07, estimate 1.3e-07
}
