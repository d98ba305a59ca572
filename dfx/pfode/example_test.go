package pfode_test

import (
	"context"
	"fmt"
	"math"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

// The log-density of a point under data N(0, I) on the VP schedule, by the
// PF-ODE from t = 1e-3 up to T with adaptive Dormand–Prince: the score is
// −x/v_t and the Fisher trace d/v_t, v_t = α² + σ² = 1.
func ExampleSolveAdaptive() {
	src := schedule.Continuous{Schedule: schedule.DefaultVP()}
	model := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
		b, d := x.Dims()
		v := c.Alpha*c.Alpha + c.Sigma*c.Sigma
		ev := &score.Eval{Score: mat.NewDense(b, d, nil), Trace: make([]float64, b)}
		ev.Score.Scale(-1/v, x)
		for i := range ev.Trace {
			ev.Trace[i] = float64(d) / v
		}
		return ev, nil
	})
	x := mat.NewDense(1, 2, []float64{0.5, -1})
	sys := pfode.New(src, model, 1, 2, pfode.LogDensity)
	y := sys.Init(x, nil)
	st, err := pfode.SolveAdaptive(context.Background(), sys, 1e-3, 1, y, pfode.Adaptive{RTol: 1e-8})
	if err != nil {
		panic(err)
	}
	// q_T = N(0, v_T I) exactly (v = 1); schedule.Prior's N(0, σ_T² I) would
	// add its own small error.
	prior := schedule.PriorLogProb(schedule.Coefficients{Sigma: 1}, sys.X(y))
	logq := prior[0] - sys.LogDensity(y)[0] // log q_ε = log q_T − Δ
	exact := -math.Log(2*math.Pi) - 0.5*(0.25+1)
	fmt.Printf("log q = %.6f (exact %.6f); %d steps, %d rejected, NFE %d\n", logq, exact, st.Steps, st.Rejected, st.NFE)
	// Output:
	// log q = -2.462877 (exact -2.462877); 5 steps, 0 rejected, NFE 32
}

// gaussian1D is data N(μ, s²) in d = 1 as an exact model, and the closed form
// of its PF-ODE: x_t = α μ + √v_t z with z fixed along a trajectory and
// v_t = α² s² + σ², so the flow from t0 to t1 is
// x₁ = α₁ μ + √(v₁/v₀)(x₀ − α₀ μ).
func gaussian1D(mu, s float64) (score.Exact, func(x0 float64, c0, c1 schedule.Coefficients) float64) {
	g, err := mixture.NewGaussian(mat.NewDense(1, 1, []float64{mu}), []*mat.SymDense{mat.NewSymDense(1, []float64{s * s})}, nil)
	if err != nil {
		panic(err)
	}
	flow := func(x0 float64, c0, c1 schedule.Coefficients) float64 {
		v0 := c0.Alpha*c0.Alpha*s*s + c0.Sigma*c0.Sigma
		v1 := c1.Alpha*c1.Alpha*s*s + c1.Sigma*c1.Sigma
		return c1.Alpha*mu + math.Sqrt(v1/v0)*(x0-c0.Alpha*mu)
	}
	return score.Exact{Mixture: g}, flow
}

// DDIM and RK4 solves of a Gaussian's PF-ODE from the prior time T down to
// t = 10⁻³ against the closed-form map. DDIM is exact for a single point but
// of order 1 here: its error halves when the steps double. RK4 (order 4)
// agrees to the printed digits with 100 steps.
func ExampleSolve() {
	s := schedule.DefaultVP()
	model, flow := gaussian1D(2, 0.5)
	solve := func(m pfode.Method, steps int) (got, want float64, st pfode.Stats) {
		grid, err := schedule.TimeGrid(s, schedule.GridUniform, 1e-3, 1, steps)
		if err != nil {
			panic(err)
		}
		sys := pfode.New(schedule.Continuous{Schedule: s}, model, 1, 1, 0)
		y := sys.Init(mat.NewDense(1, 1, []float64{0.8}), nil)
		st, err = pfode.Solve(context.Background(), sys, m, grid, y, nil)
		if err != nil {
			panic(err)
		}
		c0, _ := schedule.At(s, grid[0])
		c1, _ := schedule.At(s, grid[steps])
		return y[0], flow(0.8, c0, c1), st
	}
	for _, steps := range []int{25, 50, 100, 200} {
		got, want, st := solve(pfode.DDIM, steps)
		fmt.Printf("ddim %3d steps: x₀ = %.4f (closed form %.4f), error %.4f, NFE %d\n", steps, got, want, want-got, st.NFE)
	}
	got, want, st := solve(pfode.RK4, 100)
	fmt.Printf("rk4  100 steps: x₀ = %.4f (closed form %.4f), NFE %d\n", got, want, st.NFE)
	// Output:
	// ddim  25 steps: x₀ = 2.3513 (closed form 2.3934), error 0.0421, NFE 25
	// ddim  50 steps: x₀ = 2.3718 (closed form 2.3934), error 0.0216, NFE 50
	// ddim 100 steps: x₀ = 2.3824 (closed form 2.3934), error 0.0110, NFE 100
	// ddim 200 steps: x₀ = 2.3879 (closed form 2.3934), error 0.0055, NFE 200
	// rk4  100 steps: x₀ = 2.3934 (closed form 2.3934), NFE 400
}

// The DDIM step is exact when the denoiser does not depend on x: for data at
// a single point y, ȳ = y and one step from t = 0.9 to t = 0.1 lands on
// α₁ y + (σ₁/σ₀)(x − α₀ y), the PF-ODE's exact solution.
func ExampleDDIMStep() {
	s := schedule.DefaultVP()
	m, _ := mixture.NewDirac(mat.NewDense(1, 2, []float64{1, -0.5}), nil)
	c0, _ := schedule.At(s, 0.9)
	c1, _ := schedule.At(s, 0.1)
	x := mat.NewDense(1, 2, []float64{0.3, 0.7})
	want := make([]float64, 2)
	for j, y := range []float64{1, -0.5} {
		want[j] = c1.Alpha*y + c1.Sigma/c0.Sigma*(x.At(0, j)-c0.Alpha*y)
	}
	ev, err := score.Exact{Mixture: m}.Eval(c0, x, score.WantEps)
	if err != nil {
		panic(err)
	}
	pfode.DDIMStep(x, c0, c1, ev)
	fmt.Printf("DDIM %.6f\nexact %.6f\n", x.RawRowView(0), want)
	// Output:
	// DDIM [1.037877 -0.245154]
	// exact [1.037877 -0.245154]
}

// The DDIM step's two forms are one step: x' = a x + b ε̂ with
// (a, b) = (α₁/α₀, σ₁ − a σ₀), and x' = r x + w ȳ with (r, w) = (σ₁/σ₀,
// α₁ − r α₀), for any ε̂ and its ȳ = (x − σ₀ ε̂)/α₀.
func ExampleDDIMCoefficients() {
	s := schedule.DefaultVE()
	c0, _ := schedule.At(s, 0.7)
	c1, _ := schedule.At(s, 0.4)
	x, eps := 1.3, -0.4
	ybar := (x - c0.Sigma*eps) / c0.Alpha
	a, b := pfode.DDIMEpsCoefficients(c0, c1)
	r, w := pfode.DDIMCoefficients(c0, c1)
	fmt.Printf("a x + b ε̂ = %.6f, r x + w ȳ = %.6f\n", a*x+b*eps, r*x+w*ybar)
	// Output:
	// a x + b ε̂ = 2.732916, r x + w ȳ = 2.732916
}

// The PF-ODE velocity v = f x − ½ g² ∇log q_t in its three parameterisations
// (score, ε̂ = −σ ∇log q_t, ȳ by Tweedie) is one vector.
func ExampleVelocity() {
	m, _ := mixture.NewDirac(mat.NewDense(2, 2, []float64{1, 0, -1, 1}), nil)
	c, _ := schedule.At(schedule.DefaultVP(), 0.3)
	x := mat.NewDense(1, 2, []float64{0.2, 0.4})
	ev, err := score.Exact{Mixture: m}.Eval(c, x, score.WantScore|score.WantEps|score.WantDenoiser)
	if err != nil {
		panic(err)
	}
	v := mat.NewDense(1, 2, nil)
	pfode.Velocity(v, c, x, ev.Score)
	fmt.Printf("from the score    %.6f\n", v.RawRowView(0))
	pfode.VelocityFromEps(v, c, x, ev.Eps)
	fmt.Printf("from ε̂            %.6f\n", v.RawRowView(0))
	pfode.VelocityFromDenoiser(v, c, x, ev.Denoiser)
	fmt.Printf("from the denoiser %.6f\n", v.RawRowView(0))
	// Output:
	// from the score    [-0.116374 -0.528074]
	// from ε̂            [-0.116374 -0.528074]
	// from the denoiser [-0.116374 -0.528074]
}

// d log q_t(x_t)/dt = −f d − ½ g² tr F (eq. nll_ode): for data N(μ, s²) the
// point's standard score z is fixed along the flow, so log q_t(x_t) =
// −½ log 2πv_t − z²/2 and its rate is −½ v'/v, v = α² s² + σ².
func ExampleLogDensityRate() {
	s := schedule.DefaultVP()
	c, _ := schedule.At(s, 0.3)
	const s2 = 0.25
	v := c.Alpha*c.Alpha*s2 + c.Sigma*c.Sigma
	dv := 2*c.Alpha*c.DAlpha*s2 + 2*c.Sigma*c.DSigma
	trF := 1 / v // the Fisher of N(αμ, v) is 1/v everywhere
	fmt.Printf("rate %.6f, −½ v'/v = %.6f\n", pfode.LogDensityRate(c, 1, trF), -0.5*dv/v)
	// Output:
	// rate -1.283747, −½ v'/v = -1.283747
}

// Carrying the Jacobian A = ∂x_t/∂x_{t0} (dA/dt = J A): for a Gaussian the
// flow is affine with slope √(v_t/v_{t0}), which RK4 reproduces.
func ExamplePFODE_jacobian() {
	s := schedule.DefaultVP()
	model, _ := gaussian1D(2, 0.5)
	sys := pfode.New(schedule.Continuous{Schedule: s}, model, 1, 1, pfode.Jacobian)
	y := sys.Init(mat.NewDense(1, 1, []float64{2.3}), nil)
	grid, _ := schedule.TimeGrid(s, schedule.GridUniform, 0.01, 0.8, 50)
	if _, err := pfode.Solve(context.Background(), sys, pfode.RK4, grid, y, nil); err != nil {
		panic(err)
	}
	c0, _ := schedule.At(s, 0.8)
	c1, _ := schedule.At(s, 0.01)
	v := func(c schedule.Coefficients) float64 { return c.Alpha*c.Alpha*0.25 + c.Sigma*c.Sigma }
	fmt.Printf("A = %.6f, √(v₁/v₀) = %.6f\n", sys.Jacobians(y)[0], math.Sqrt(v(c1)/v(c0)))
	// Output:
	// A = 0.501791, √(v₁/v₀) = 0.501791
}

// The methods by name, with their order and evaluations per step.
func ExampleParseMethod() {
	for _, name := range []string{"euler", "heun", "rk4", "dopri5", "ddim"} {
		m, err := pfode.ParseMethod(name)
		if err != nil {
			panic(err)
		}
		stages := 1
		if tb, ok := m.(*pfode.Tableau); ok {
			stages = tb.Stages()
		}
		fmt.Printf("%-6s order %d, evaluations per step %d\n", m.Name(), m.Order(), stages)
	}
	_, err := pfode.ParseMethod("rk45")
	fmt.Println(err != nil)
	// Output:
	// euler  order 1, evaluations per step 1
	// heun   order 2, evaluations per step 2
	// rk4    order 4, evaluations per step 4
	// dopri5 order 5, evaluations per step 7
	// ddim   order 1, evaluations per step 1
	// true
}

// Type-7 quantiles (R's and NumPy's default): the p-quantile of n sorted
// values sits at the 0-based position (n − 1) p, linearly interpolated; for
// 1 … 5 the 0.9-quantile is 4 + 0.6·(5 − 4) = 4.6.
func ExampleEmpiricalQuantiles() {
	v := []float64{5, 1, 4, 2, 3}
	fmt.Printf("%.2f\n", pfode.EmpiricalQuantiles(v, []float64{0, 0.25, 0.5, 0.9, 1}))
	fmt.Println(v)
	// Output:
	// [1.00 2.00 3.00 4.60 5.00]
	// [5 1 4 2 3]
}

// A Level target holds a sample on a quantile curve of log q_t: on the curve
// its rate is the curve's slope, off it the gap closes at rate Gain.
func ExampleQuantiles_Level() {
	q, err := pfode.QuantilesOf([]float64{0.1, 0.5, 0.9},
		[][]float64{{-3, -2, -1, 0, 1}, {-5, -4, -3, -2, -1}, {-7, -6, -5, -4, -3}},
		[]float64{0.5}, "by hand")
	if err != nil {
		panic(err)
	}
	l := q.Level(0, 2)
	fmt.Printf("medians %.1f; at t = 0.3 level %.2f, slope %.2f\n", q.Values, l.At(0.3), l.Slope(0.3))
	fmt.Printf("rate on the curve %.2f, 0.5 nats above it %.2f\n", l.Rate(0.3, l.At(0.3), 0), l.Rate(0.3, l.At(0.3)+0.5, 0))
	// Output:
	// medians [[-1.0] [-3.0] [-5.0]]; at t = 0.3 level -2.00, slope -5.00
	// rate on the curve -5.00, 0.5 nats above it -4.00
}
