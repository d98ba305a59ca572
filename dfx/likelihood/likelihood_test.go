package likelihood

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

func mustSchedule(t *testing.T, name string) schedule.Schedule {
	t.Helper()
	s, err := schedule.ByName(name, schedule.Params{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gaussian is q0 = N(μ, s² I) in d = 3, a mixture with one component.
func gaussian(t *testing.T) *mixture.Gaussian {
	t.Helper()
	cov := mat.NewSymDense(3, []float64{0.5, 0, 0, 0, 0.5, 0, 0, 0, 0.5})
	g, err := mixture.NewGaussian(mat.NewDense(1, 3, []float64{0.3, -0.2, 0.1}), []*mat.SymDense{cov}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func exactLogProb(t *testing.T, m mixture.Mixture, s schedule.Schedule, tt float64, x *mat.Dense) []float64 {
	t.Helper()
	r, err := m.Eval(mixture.Query{At: at(t, s, tt), X: x, Want: mixture.LogProb})
	if err != nil {
		t.Fatal(err)
	}
	return r.LogProb
}

func exactPrior(t *testing.T, m mixture.Mixture, s schedule.Schedule) func(*mat.Dense) ([]float64, error) {
	_, hi := s.Interval()
	return func(x *mat.Dense) ([]float64, error) { return exactLogProb(t, m, s, hi, x), nil }
}

func points(seed uint64, b, d int, scale float64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := mat.NewDense(b, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = scale * rng.NormFloat64()
	}
	return x
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestLogProbOfGaussianMatchesClosedFormWithRK4(t *testing.T) {
	for _, name := range []string{"ve", "vp", "edm"} {
		s := mustSchedule(t, name)
		g := gaussian(t)
		x := points(1, 16, 3, 1)
		lo, _ := s.Interval()
		res, err := LogProb(x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 128, Solver: RK4, Prior: exactPrior(t, g, s)})
		if err != nil {
			t.Fatal(err)
		}
		want := exactLogProb(t, g, s, lo, x)
		if e := maxAbsDiff(res.LogProb, want); e > 2e-5 {
			t.Errorf("%s: max |log q − exact| = %g", name, e)
		}
	}
}

func TestEulerErrorHalvesAndRK4ErrorFallsSixteenfoldWhenStepsDouble(t *testing.T) {
	s := mustSchedule(t, "vp")
	g := gaussian(t)
	x := points(2, 8, 3, 1)
	lo, _ := s.Interval()
	want := exactLogProb(t, g, s, lo, x)
	errAt := func(solver Solver, n int) float64 {
		res, err := LogProb(x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: n, Solver: solver, Grid: schedule.GridUniform, Prior: exactPrior(t, g, s)})
		if err != nil {
			t.Fatal(err)
		}
		return maxAbsDiff(res.LogProb, want)
	}
	for _, c := range []struct {
		solver   Solver
		n        int
		min, max float64
	}{{Euler, 200, 1.7, 2.3}, {Heun, 50, 3.3, 4.7}, {RK4, 10, 11, 22}} {
		r := errAt(c.solver, c.n) / errAt(c.solver, 2*c.n)
		if r < c.min || r > c.max {
			t.Errorf("%s: error ratio %.2f for %d → %d steps, want in [%g, %g]", c.solver, r, c.n, 2*c.n, c.min, c.max)
		}
	}
}

func TestSolverErrorEstimateTracksTheTrueError(t *testing.T) {
	s := mustSchedule(t, "vp")
	g := gaussian(t)
	x := points(3, 8, 3, 1)
	lo, _ := s.Interval()
	want := exactLogProb(t, g, s, lo, x)
	res, err := LogProb(x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 64, Solver: Heun, Prior: exactPrior(t, g, s), EstimateError: true})
	// (the default grid for VP is uniform in t)
	if err != nil {
		t.Fatal(err)
	}
	maxTrue, maxEst := 0.0, 0.0
	for i := range want {
		trueErr := math.Abs(res.LogProb[i] - want[i])
		if est := res.SolverError[i]; trueErr > 2*est+1e-9 {
			t.Errorf("row %d: estimate %g below half the true error %g", i, est, trueErr)
		}
		maxTrue, maxEst = math.Max(maxTrue, trueErr), math.Max(maxEst, res.SolverError[i])
	}
	if maxEst > 2*maxTrue {
		t.Errorf("largest estimate %g, largest true error %g", maxEst, maxTrue)
	}
	if res.Evals != 2*64+2*32 {
		t.Errorf("evaluations %d, want %d", res.Evals, 2*64+2*32)
	}
}

func TestLogProbOfDiracMixtureAtSmallestTimeIsAccurate(t *testing.T) {
	s := mustSchedule(t, "ve")
	y := points(4, 40, 2, 2)
	m, err := mixture.NewDirac(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := s.Interval()
	// points drawn from q_ε: a data point plus σ_ε noise
	x := points(5, 20, 2, s.Sigma(lo))
	for i := 0; i < 20; i++ {
		for j := 0; j < 2; j++ {
			x.Set(i, j, x.At(i, j)+y.At(i, j))
		}
	}
	res, err := LogProb(x, score.Exact{Mixture: m}, Config{Schedule: s, Steps: 200, Solver: RK4, EstimateError: true, Prior: exactPrior(t, m, s)})
	if err != nil {
		t.Fatal(err)
	}
	want := exactLogProb(t, m, s, lo, x)
	for i := range want {
		if rel := math.Abs(res.LogProb[i]-want[i]) / math.Abs(want[i]); rel > 1e-4 {
			t.Errorf("row %d: log q %g, exact %g (relative error %.2g, solver estimate %.2g)", i, res.LogProb[i], want[i], rel, res.SolverError[i])
		}
	}
}

func TestLogProbAtIntermediateTimeMatchesExact(t *testing.T) {
	s := mustSchedule(t, "ve")
	m, _ := mixture.NewDirac(points(6, 30, 2, 2), nil)
	x := points(7, 10, 2, 2)
	want := exactLogProb(t, m, s, 0.5, x)
	res, err := LogProb(x, score.Exact{Mixture: m}, Config{Schedule: s, T0: 0.5, Steps: 60, Solver: RK4, Prior: exactPrior(t, m, s)})
	if err != nil {
		t.Fatal(err)
	}
	if e := maxAbsDiff(res.LogProb, want); e > 1e-5 {
		t.Errorf("max |log q_0.5 − exact| = %g", e)
	}
	// the default N(0, σ_T² I) prior adds the error of q_T ≈ N(0, σ_T² I),
	// of order ‖x_T‖·‖y‖/σ_T² (σ_T = 50 here)
	res, _ = LogProb(x, score.Exact{Mixture: m}, Config{Schedule: s, T0: 0.5, Steps: 60, Solver: RK4})
	if e := maxAbsDiff(res.LogProb, want); e > 0.05 {
		t.Errorf("with the Gaussian prior: max |log q_0.5 − exact| = %g", e)
	}
}

func TestLogProbAtTheEndTimeIsThePrior(t *testing.T) {
	s := mustSchedule(t, "vp")
	x := points(8, 5, 4, 1)
	_, hi := s.Interval()
	res, err := LogProb(x, score.Exact{Mixture: gaussian4(t)}, Config{Schedule: s, T0: hi, Steps: 10})
	if err != nil {
		t.Fatal(err)
	}
	if e := maxAbsDiff(res.LogProb, GaussianLogProb(x, s.Sigma(hi))); e != 0 || res.Evals != 0 {
		t.Errorf("log q_T differs from the prior by %g after %d evaluations", e, res.Evals)
	}
}

func gaussian4(t *testing.T) *mixture.Gaussian {
	g, err := mixture.NewGaussian(mat.NewDense(1, 4, nil), []*mat.SymDense{mat.NewSymDense(4, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestSeparateScoreAndTraceEqualExactModel(t *testing.T) {
	s := mustSchedule(t, "ve")
	g := gaussian(t)
	x := points(9, 6, 3, 1)
	f := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
		r, err := g.Eval(mixture.Query{At: c, X: x, Want: mixture.Score})
		if err != nil {
			return nil, err
		}
		tr, err := g.Eval(mixture.Query{At: c, X: x, Want: mixture.Trace})
		if err != nil {
			return nil, err
		}
		return &score.Eval{Score: r.Score, Trace: tr.Trace}, nil
	})
	a, err := LogProb(x, f, Config{Schedule: s, Steps: 20, Solver: Heun})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LogProb(x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 20, Solver: Heun})
	if e := maxAbsDiff(a.LogProb, b.LogProb); e > 1e-12 {
		t.Errorf("separate score and trace and the exact model differ by %g", e)
	}
}

func TestLogProbRejectsBadInput(t *testing.T) {
	s := mustSchedule(t, "ve")
	g := gaussian(t)
	x := points(10, 2, 3, 1)
	bad := mat.DenseCopyOf(x)
	bad.Set(1, 1, math.NaN())
	wrongDim := points(10, 2, 2, 1)
	for name, c := range map[string]struct {
		x   *mat.Dense
		dyn score.Model
		cfg Config
	}{
		"noise to data":        {x, score.Exact{Mixture: g}, Config{Schedule: s, T0: 0.9, T1: 0.1, Steps: 4}},
		"zero steps":           {x, score.Exact{Mixture: g}, Config{Schedule: s}},
		"one step estimate":    {x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 1, EstimateError: true}},
		"no schedule":          {x, score.Exact{Mixture: g}, Config{Steps: 4}},
		"solver without log q": {x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 4, Solver: pfode.DDIM}},
		"negative rtol":        {x, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 4, RTol: -1}},
		"time outside":         {x, score.Exact{Mixture: g}, Config{Schedule: s, T1: 2, Steps: 4}},
		"NaN point":            {bad, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 4}},
		"no points":            {nil, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 4}},
		"no model":             {x, nil, Config{Schedule: s, Steps: 4}},
	} {
		if _, err := LogProb(c.x, c.dyn, c.cfg); !errors.Is(err, ErrInput) {
			t.Errorf("%s: got %v, want ErrInput", name, err)
		}
	}
	if _, err := LogProb(wrongDim, score.Exact{Mixture: g}, Config{Schedule: s, Steps: 4}); err == nil {
		t.Error("points of the wrong dimension accepted")
	}
}

func at(t testing.TB, s schedule.Schedule, tt float64) schedule.Coefficients {
	t.Helper()
	c, err := schedule.At(s, tt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAdaptiveLogProbMeetsItsToleranceAndReportsStats(t *testing.T) {
	s := mustSchedule(t, "vp")
	g := gaussian(t)
	x := points(3, 6, 3, 1)
	lo, _ := s.Interval()
	want := exactLogProb(t, g, s, lo, x)
	for _, rtol := range []float64{1e-5, 1e-8} {
		res, err := LogProb(x, score.Exact{Mixture: g}, Config{Schedule: s, RTol: rtol, Prior: exactPrior(t, g, s), EstimateError: true})
		if err != nil {
			t.Fatal(err)
		}
		e := maxAbsDiff(res.LogProb, want)
		if e > 100*rtol {
			t.Errorf("rtol %g: error %g", rtol, e)
		}
		if res.Stats.Steps == 0 || res.Stats.NFE != res.Evals || len(res.SolverError) != len(want) {
			t.Errorf("rtol %g: stats %+v, evals %d", rtol, res.Stats, res.Evals)
		}
		t.Logf("rtol %g: error %.2g, estimate %.2g, stats %+v", rtol, e, res.SolverError[0], res.Stats)
	}
}

func TestLogProbContextStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	y := mat.NewDense(2, 1, []float64{-1, 1})
	m, err := mixture.NewDirac(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LogProbContext(ctx, mat.NewDense(1, 1, []float64{0.3}), score.Exact{Mixture: m}, Config{Schedule: schedule.DefaultVP(), T0: 1e-3, T1: 1, Steps: 50})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
