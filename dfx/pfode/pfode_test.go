package pfode

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// gaussian is the PF-ODE of data N(μ, s² I): q_t = N(α μ, v_t I) with
// v_t = α² s² + σ², score −(x − α μ)/v_t, Fisher I/v_t. Its flow is linear
// with the closed form x_t = α_t μ + √(v_t/v_0) (x_0 − α_0 μ), so
// A = √(v_t/v_0) I and Δ = log q_t(x_t) − log q_0(x_0) = −(d/2) log(v_t/v_0).
// With s = 0 (one data point) the denoiser is μ everywhere and DDIM is exact.
type gaussian struct {
	mu []float64
	s  float64
}

func (g gaussian) v(c schedule.Coefficients) float64 {
	return c.Alpha*c.Alpha*g.s*g.s + c.Sigma*c.Sigma
}

func (g gaussian) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	b, d := x.Dims()
	v := g.v(c)
	ev := &score.Eval{Score: mat.NewDense(b, d, nil)}
	for i := 0; i < b; i++ {
		for j := 0; j < d; j++ {
			ev.Score.Set(i, j, -(x.At(i, j)-c.Alpha*g.mu[j])/v)
		}
	}
	if want&score.WantTrace != 0 {
		ev.Trace = make([]float64, b)
		for i := range ev.Trace {
			ev.Trace[i] = float64(d) / v
		}
	}
	if want&score.WantFisher != 0 {
		for i := 0; i < b; i++ {
			f := mat.NewSymDense(d, nil)
			for j := 0; j < d; j++ {
				f.SetSym(j, j, 1/v)
			}
			ev.Fisher = append(ev.Fisher, f)
		}
	}
	return ev, nil
}

// exact is the closed-form end state of the flow from (x0, t0) to t1.
func (g gaussian) exact(src schedule.Source, x0 *mat.Dense, t0, t1 float64) (*mat.Dense, float64) {
	c0, _ := src.At(t0)
	c1, _ := src.At(t1)
	k := math.Sqrt(g.v(c1) / g.v(c0))
	b, d := x0.Dims()
	out := mat.NewDense(b, d, nil)
	for i := 0; i < b; i++ {
		for j := 0; j < d; j++ {
			out.Set(i, j, c1.Alpha*g.mu[j]+k*(x0.At(i, j)-c0.Alpha*g.mu[j]))
		}
	}
	return out, k
}

func maxDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

var (
	vp      = schedule.Continuous{Schedule: schedule.DefaultVP()}
	testG   = gaussian{mu: []float64{0.7, -0.4}, s: 0.5}
	startX  = mat.NewDense(3, 2, []float64{0.3, -1.2, 1.1, 0.4, -0.8, 0.9})
	allComp = LogDensity | Jacobian
)

// solveErr integrates the Gaussian PF-ODE from t0 to t1 in n steps and
// returns the largest error of x, Δ and A against the closed form.
func solveErr(t *testing.T, m Method, carry Carry, t0, t1 float64, n int) float64 {
	t.Helper()
	b, d := startX.Dims()
	p := New(vp, testG, b, d, carry)
	y := p.Init(startX, nil)
	if _, err := Solve(context.Background(), p, m, Uniform(t0, t1, n), y, nil); err != nil {
		t.Fatal(err)
	}
	want, k := testG.exact(vp, startX, t0, t1)
	e := maxDiff(p.X(y).RawMatrix().Data, want.RawMatrix().Data)
	if dl := p.LogDensity(y); dl != nil {
		for _, v := range dl {
			e = math.Max(e, math.Abs(v-(-float64(d)*math.Log(k))))
		}
	}
	if a := p.Jacobians(y); a != nil {
		for c := 0; c < b; c++ {
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					w := 0.0
					if i == j {
						w = k
					}
					e = math.Max(e, math.Abs(a[c*d*d+i*d+j]-w))
				}
			}
		}
	}
	return e
}

func TestFixedStepMethodsConvergeAtTheirOrderOnTheGaussianPFODE(t *testing.T) {
	cases := []struct {
		m Method
		n int
	}{{Euler, 64}, {Heun, 32}, {RK4, 16}}
	for _, c := range cases {
		for _, dir := range []struct {
			name   string
			t0, t1 float64
		}{{"noise to data", 1, 0.1}, {"data to noise", 0.1, 1}} {
			e1 := solveErr(t, c.m, allComp, dir.t0, dir.t1, c.n)
			e2 := solveErr(t, c.m, allComp, dir.t0, dir.t1, 2*c.n)
			order := math.Log2(e1 / e2)
			t.Logf("%s, %s: order %.3f", c.m.Name(), dir.name, order)
			if math.Abs(order-float64(c.m.Order())) > 0.3 {
				t.Errorf("%s, %s: observed order %.3f (errors %.3g, %.3g), want %d ± 0.3",
					c.m.Name(), dir.name, order, e1, e2, c.m.Order())
			}
		}
	}
}

func TestDDIMIsExactForOneDataPointAndConvergesAtOrderOneOtherwise(t *testing.T) {
	point := gaussian{mu: testG.mu, s: 0}
	b, d := startX.Dims()
	p := New(vp, point, b, d, Jacobian)
	y := p.Init(startX, nil)
	if _, err := Solve(context.Background(), p, DDIM, Uniform(1, 0.01, 7), y, nil); err != nil {
		t.Fatal(err)
	}
	want, k := point.exact(vp, startX, 1, 0.01)
	if e := maxDiff(p.X(y).RawMatrix().Data, want.RawMatrix().Data); e > 1e-12 {
		t.Errorf("DDIM on one data point: error %g, want exact", e)
	}
	for c := 0; c < b; c++ {
		if e := math.Abs(p.Jacobians(y)[c*d*d] - k); e > 1e-12 {
			t.Errorf("DDIM Jacobian: error %g, want exact", e)
		}
	}
	e1 := solveErr(t, DDIM, Jacobian, 1, 0.1, 32)
	e2 := solveErr(t, DDIM, Jacobian, 1, 0.1, 64)
	if o := math.Log2(e1 / e2); math.Abs(o-1) > 0.3 {
		t.Errorf("DDIM on a Gaussian: observed order %.3f, want 1", o)
	}
}

func TestDDIMRefusesTheLogDensity(t *testing.T) {
	p := New(vp, testG, 3, 2, LogDensity)
	if _, err := Solve(context.Background(), p, DDIM, Uniform(1, 0.1, 2), p.Init(startX, nil), nil); err == nil {
		t.Error("DDIM with a log-density component: no error")
	}
}

func TestAdaptiveMeetsItsToleranceInBothDirectionsAndCountsEvaluations(t *testing.T) {
	b, d := startX.Dims()
	for _, rtol := range []float64{1e-4, 1e-7} {
		for _, dir := range [][2]float64{{1, 1e-3}, {1e-3, 1}} {
			p := New(vp, testG, b, d, LogDensity)
			y := p.Init(startX, nil)
			var seen []float64
			obs := func(step int, tt float64, _ []float64) error {
				if step != len(seen)+1 {
					t.Errorf("observer called with step %d after %d calls", step, len(seen))
				}
				seen = append(seen, tt)
				return nil
			}
			st, err := SolveAdaptive(context.Background(), p, dir[0], dir[1], y, Adaptive{RTol: rtol, ATol: rtol * 1e-3, Observe: obs})
			if err != nil {
				t.Fatal(err)
			}
			want, k := testG.exact(vp, startX, dir[0], dir[1])
			e := maxDiff(p.X(y).RawMatrix().Data, want.RawMatrix().Data)
			e = math.Max(e, maxDiff(p.LogDensity(y), []float64{-2 * math.Log(k), -2 * math.Log(k), -2 * math.Log(k)}))
			if e > 50*rtol {
				t.Errorf("rtol %g, t %g → %g: error %g > 50 rtol", rtol, dir[0], dir[1], e)
			}
			if st.Steps < 3 || st.NFE != 2+6*(st.Steps+st.Rejected) {
				t.Errorf("rtol %g: stats %+v: want NFE = 2 + 6 (accepted + rejected)", rtol, st)
			}
			if len(seen) != st.Steps || seen[len(seen)-1] != dir[1] {
				t.Fatalf("observer saw %d steps ending at %g; stats %+v", len(seen), seen[len(seen)-1], st)
			}
			for i := 1; i < len(seen); i++ {
				if (seen[i]-seen[i-1])*(dir[1]-dir[0]) <= 0 {
					t.Errorf("observed times not monotone: %g then %g", seen[i-1], seen[i])
				}
			}
		}
	}
	// A tighter tolerance must cost more steps and give a smaller error.
	cost := func(rtol float64) (int, float64) {
		p := New(vp, testG, b, d, 0)
		y := p.Init(startX, nil)
		st, err := SolveAdaptive(context.Background(), p, 1, 1e-3, y, Adaptive{RTol: rtol, ATol: rtol * 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := testG.exact(vp, startX, 1, 1e-3)
		return st.NFE, maxDiff(p.X(y).RawMatrix().Data, want.RawMatrix().Data)
	}
	n1, e1 := cost(1e-4)
	n2, e2 := cost(1e-8)
	if !(n2 > n1 && e2 < e1/100) {
		t.Errorf("rtol 1e-4: NFE %d error %g; rtol 1e-8: NFE %d error %g", n1, e1, n2, e2)
	}
}

func TestObserverSeesEveryAcceptedStepOfAFixedGrid(t *testing.T) {
	p := New(vp, testG, 3, 2, 0)
	grid := Uniform(0.2, 0.9, 9)
	var seen []float64
	st, err := Solve(context.Background(), p, Heun, grid, p.Init(startX, nil), func(step int, tt float64, y []float64) error {
		if step != len(seen)+1 || len(y) != p.Len() {
			t.Errorf("step %d, state of length %d", step, len(y))
		}
		seen = append(seen, tt)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Steps != 9 || st.NFE != 18 || maxDiff(seen, grid[1:]) != 0 {
		t.Errorf("stats %+v, observed times %v, want %v", st, seen, grid[1:])
	}
}

// For dA/dt = J A and dλ/dt = −Jᵀ λ, λᵀ A is constant: the adjoint
// component is the transpose of the variational one.
func TestAdjointTimesJacobianIsConserved(t *testing.T) {
	b, d := startX.Dims()
	two := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
		// An anisotropic Gaussian N(0, diag(0.2, 1.5)): J is not a multiple of I.
		ev := &score.Eval{Score: mat.NewDense(b, d, nil)}
		vs := []float64{c.Alpha*c.Alpha*0.2 + c.Sigma*c.Sigma, c.Alpha*c.Alpha*1.5 + c.Sigma*c.Sigma}
		for i := 0; i < b; i++ {
			for j := 0; j < d; j++ {
				ev.Score.Set(i, j, -x.At(i, j)/vs[j])
			}
			ev.Fisher = append(ev.Fisher, mat.NewSymDense(d, []float64{1 / vs[0], 0.3 / vs[0], 0.3 / vs[0], 1 / vs[1]}))
		}
		return ev, nil
	})
	p := New(vp, two, b, d, Jacobian|Adjoint)
	lam0 := mat.NewDense(b, d, []float64{1, 0, 0.5, -2, 0.3, 0.3})
	y := p.Init(startX, lam0)
	if _, err := Solve(context.Background(), p, RK4, Uniform(0.9, 0.1, 200), y, nil); err != nil {
		t.Fatal(err)
	}
	a, lam := p.Jacobians(y), p.Adjoint(y)
	for c := 0; c < b; c++ {
		for j := 0; j < d; j++ {
			s := 0.0
			for i := 0; i < d; i++ {
				s += lam.At(c, i) * a[c*d*d+i*d+j]
			}
			if math.Abs(s-lam0.At(c, j)) > 1e-8 {
				t.Errorf("chain %d: (λᵀA)_%d = %g, want %g", c, j, s, lam0.At(c, j))
			}
		}
	}
}

// TestDDIMStepIsExactForOnePoint: for data that is one point y the exact
// noise prediction is ε = (x − α y)/σ and the denoiser is y, and a DDIM
// step from t to t₁, in either form, maps α y + σ ε to α₁ y + σ₁ ε exactly;
// its adjoint step is the transpose of DDIMJacobian.
func TestDDIMStepIsExactForOnePoint(t *testing.T) {
	s := schedule.DefaultVP()
	rng := rand.New(rand.NewPCG(3, 3))
	const d = 5
	y, e := make([]float64, d), make([]float64, d)
	for j := range y {
		y[j], e[j] = rng.Float64()*2-1, rng.NormFloat64()
	}
	c0, _ := schedule.At(s, 0.8)
	c1, _ := schedule.At(s, 0.3)
	x0 := mat.NewDense(1, d, nil)
	for j := range y {
		x0.Set(0, j, c0.Alpha*y[j]+c0.Sigma*e[j])
	}
	for name, ev := range map[string]*score.Eval{
		"eps":      {Eps: mat.NewDense(1, d, e)},
		"denoiser": {Denoiser: mat.NewDense(1, d, y)},
	} {
		x := mat.DenseCopyOf(x0)
		DDIMStep(x, c0, c1, ev)
		for j := range y {
			if want := c1.Alpha*y[j] + c1.Sigma*e[j]; math.Abs(x.At(0, j)-want) > 1e-12 {
				t.Fatalf("%s form, pixel %d: %g, want %g", name, j, x.At(0, j), want)
			}
		}
	}
	// λ ← a λ + b σ₀ F λ must equal Sᵀ λ with S = DDIMJacobian (F symmetric).
	f := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			f.SetSym(i, j, rng.NormFloat64())
		}
	}
	lam, fl := mat.NewDense(1, d, nil), mat.NewDense(1, d, nil)
	for j := range d {
		lam.Set(0, j, rng.NormFloat64())
	}
	fl.Mul(lam, f)
	want := make([]float64, d*d)
	r, w := DDIMCoefficients(c0, c1)
	DDIMJacobian(want, c0, r, w, f)
	var sl mat.Dense
	sl.Mul(lam, mat.NewDense(d, d, want))
	DDIMAdjointStep(lam, c0, c1, fl)
	for j := range d {
		if math.Abs(lam.At(0, j)-sl.At(0, j)) > 1e-10*(1+math.Abs(sl.At(0, j))) {
			t.Fatalf("adjoint step %d: %g, want %g", j, lam.At(0, j), sl.At(0, j))
		}
	}
}

// TestDriveChoosesTheParameterisationOfTheVelocity: the model answers with
// its score; the velocity computed from the score, from ε̂ and from the
// denoiser (Drive, filled by Tweedie) agree to rounding, and each Drive
// asks the model for its parameterisation.
func TestDriveChoosesTheParameterisationOfTheVelocity(t *testing.T) {
	g := gaussian{mu: []float64{0.5, -1, 2}, s: 0.7}
	src := schedule.Continuous{Schedule: schedule.DefaultVP()}
	x := mat.NewDense(2, 3, []float64{0.1, 0.2, -0.3, 1, -2, 0.5})
	var vels [][]float64
	for _, drive := range []score.Want{0, score.WantScore, score.WantEps, score.WantDenoiser} {
		var asked score.Want
		spy := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
			asked = want
			return g.Eval(c, x, want)
		})
		sys := New(src, spy, 2, 3, 0)
		sys.Drive = drive
		y := sys.Init(x, nil)
		dy := make([]float64, len(y))
		if err := sys.Deriv(0.4, y, dy); err != nil {
			t.Fatal(err)
		}
		if asked != drive {
			t.Errorf("Drive %d asked the model for %d", drive, asked)
		}
		vels = append(vels, dy)
	}
	for k, v := range vels[1:] {
		for i := range v {
			if math.Abs(v[i]-vels[0][i]) > 1e-12*(1+math.Abs(vels[0][i])) {
				t.Errorf("drive %d: velocity[%d] = %g, from the score %g", k+1, i, v[i], vels[0][i])
			}
		}
	}
}
