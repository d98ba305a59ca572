package density

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestDensityMissDiagnosis looks for the cause of the full MNIST density
// run's systematic level misses (README, "Density guidance"): with every
// Hutchinson-type trace the samples guided to a network quantile level end
// 0.07–0.8 bpd short of it (less log-density) while the ℓ they track ends
// within 0.02–0.11 bpd of it. It is a
// diagnostic of the committed networks, minutes to an hour on the 2-core
// VM, so it runs only when asked (scripts/density-miss.sh):
//
//	DFX_DENSITY_MISS=<work folder of mnist-density, or "none"> go test ./studies/density -run TestDensityMissDiagnosis -v -timeout 3h
//
// On the first DFX_DENSITY_MISS_N (default 4) noises of the experiment,
// guided to the median level with skip-hutchinson:4, it separates three
// candidate causes:
//   - the measurement: the achieved bpd at dopri5 rtol 10⁻³ (the run's)
//     against 10⁻⁴, same probes;
//   - RK4: the guided path with 100 steps (the run's) against 400;
//   - the guide's premise: moving along s/‖s‖² by λ changes log p by λ only
//     where s·∇log p = ‖s‖² (as where s = ∇log p). For the network, p is the PF-ODE's own density
//     (what the measurement integrates), whose gradient need not be the
//     learned score. c = ∂_h log p(x + h s/‖s‖²) at h = 0 (central
//     differences, same probes) is 1 where it is; the guide's tracked ℓ
//     then overstates the change by (1 − c) λ. The same finite difference
//     on the skip mixture with its exact trace (where c = 1) checks the
//     method.
//
// Then the premise along the guided path ("along": c_t at t ≈ 0.3, 0.1,
// 0.03, 0.01, 0.003 and t_min of the path, with the network's log q_t by its PF-ODE
// from t, the exact mixture's closed form checking the finite difference at
// each t). And, guiding to the median with no guidance below t = u for a
// few u, where in t the gap between tracked and achieved arises.
func TestDensityMissDiagnosis(t *testing.T) {
	work := os.Getenv("DFX_DENSITY_MISS")
	if work == "" {
		t.Skip("diagnostic of the MNIST density run (scripts/density-miss.sh): set DFX_DENSITY_MISS to its work folder or none")
	}
	n := 4
	if s := os.Getenv("DFX_DENSITY_MISS_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 64 {
			t.Fatalf("DFX_DENSITY_MISS_N=%q: want 1…64", s)
		}
		n = v
	}
	ctx := context.Background()
	nets, err := mnist.OpenNetworks("")
	if err != nil {
		t.Fatal(err)
	}
	if !models.HasNetwork(nets.Store, models.MixtureScope) {
		t.Fatal("the committed ε-network has no mixture skip")
	}
	cfg := MNISTFull()
	if work == "none" {
		work = ""
	}
	digest, err := networksDigest(nets.Net)
	if err != nil {
		t.Fatal(err)
	}
	keep, err := openStore("mnist-density", work, cfg, digest, nets.Backend.Name(), mnist.Dim)
	if err != nil {
		t.Fatal(err)
	}
	q, err := keep.levels()
	if err != nil {
		t.Fatal(err)
	}
	if q == nil {
		t.Logf("no levels in %q: computing them (%d reference samples, %s)", work, cfg.RefSamples, cfg.RefTrace)
		ref, err := TraceModel(nets.Net, cfg.RefTrace, cfg.Seed+7, access.PromptRows(mnist.Dim))
		if err != nil {
			t.Fatal(err)
		}
		if q, _, err = ReferenceLevels(ctx, ref, mnist.InitialNoise(cfg.Seed+1, 0, cfg.RefSamples), cfg.Quantiles, mnistProblem(cfg).sampling(cfg.Steps)); err != nil {
			t.Fatal(err)
		}
	}
	var median target
	for _, tg := range cfg.targets().list(q, false) {
		if tg.name == "q=0.5" {
			median = tg
		}
	}
	if median.target == nil {
		t.Fatal("no median level")
	}
	const trace = "skip-hutchinson:4"
	xT := mnist.InitialNoise(cfg.Seed, 0, n)
	start := PriorStart(mnist.Schedule(), xT)
	tMin, _ := mnist.Schedule().Interval()
	c0, err := schedule.At(mnist.Schedule(), tMin)
	if err != nil {
		t.Fatal(err)
	}
	// measure is the network's log p at t_min by dopri5 with the probes of
	// seed (the same probes for every call with one seed).
	measure := func(t *testing.T, x *mat.Dense, rtol float64, seed uint64) []float64 {
		meas, err := TraceModel(nets.Net, trace, seed, access.PromptRows(mnist.Dim))
		if err != nil {
			t.Fatal(err)
		}
		res, err := likelihood.LogProbContext(ctx, x, meas, likelihood.Config{Schedule: mnist.Schedule(), RTol: rtol})
		if err != nil {
			t.Fatal(err)
		}
		return res.LogProb
	}
	bpd := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = BitsPerDim(mnist.Problem(), x)
		}
		return out
	}
	row := func(name string, v []float64) string {
		e := stats.EstimateOf(v)
		s := fmt.Sprintf("%-34s %8.4f ± %.4f |", name, e.Mean, e.SE)
		for _, x := range v {
			s += fmt.Sprintf(" %8.4f", x)
		}
		return s
	}
	t.Logf("level (median, t_min): %.4f bpd; %d samples, guided and tracked with %s, measured with %s", BitsPerDim(mnist.Problem(), median.level), n, trace, trace)
	m, err := TraceModel(nets.Net, trace, cfg.Seed+3, access.PromptRows(mnist.Dim))
	if err != nil {
		t.Fatal(err)
	}
	guided := func(t *testing.T, steps int, until float64) *Run {
		run, err := Sample(ctx, m, median.target, xT, start, SampleConfig{Schedule: mnist.Schedule(), Grid: GridLogSNR, Steps: steps, Until: until}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	// fd is c = ∂_h log p(x + h s/‖s‖²) at h = 0 by central differences
	// at ±h nats (the change of log p the step would make were c = 1).
	fd := func(x *mat.Dense, s *mat.Dense, h float64, logp func(*mat.Dense) []float64) []float64 {
		b, d := x.Dims()
		xp, xm := mat.NewDense(b, d, nil), mat.NewDense(b, d, nil)
		for i := range b {
			sr := s.RawRowView(i)
			n2 := floats.Dot(sr, sr)
			floats.AddScaledTo(xp.RawRowView(i), x.RawRowView(i), h/n2, sr)
			floats.AddScaledTo(xm.RawRowView(i), x.RawRowView(i), -h/n2, sr)
		}
		lp, lm := logp(xp), logp(xm)
		c := make([]float64, b)
		for i := range c {
			c[i] = (lp[i] - lm[i]) / (2 * h)
		}
		return c
	}
	t.Run("steps", func(t *testing.T) { // the measurement and RK4
		for _, steps := range []int{100, 400} {
			run := guided(t, steps, 0)
			tr := bpd(run.Ell)
			a3, a4 := bpd(measure(t, run.X, 1e-3, cfg.Seed+11)), bpd(measure(t, run.X, 1e-4, cfg.Seed+11))
			gap := make([]float64, n)
			floats.SubTo(gap, a4, tr)
			t.Logf("RK4 %d steps (%v, λ limited %.3f, max |λ| %.3g):", steps, run.Time, float64(run.Guide.Limited)/float64(max(1, run.Guide.Evals)), run.Guide.MaxLambda)
			t.Log(row("  tracked", tr))
			t.Log(row("  achieved, dopri5 rtol 1e-3", a3))
			t.Log(row("  achieved, dopri5 rtol 1e-4", a4))
			t.Log(row("  achieved (1e-4) − tracked", gap))
		}
	})

	t.Run("premise", func(t *testing.T) {
		x100 := guided(t, 100, 0).X
		// The guide's premise at the guided samples (100 steps): c along
		// s/‖s‖² at t_min, from central differences of the measured log p.
		scoreAt := func(m score.Model, x *mat.Dense) *mat.Dense {
			e, err := m.Eval(c0, x, score.WantScore)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Fill(c0, x, score.WantScore); err != nil {
				t.Fatal(err)
			}
			return e.Score
		}
		_, g, err := models.SkipControlVariate(nets.Backend, nets.Store, mnist.Schedule(), nets.Net.DType, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		exact := score.Exact{Mixture: g}
		closed := func(x *mat.Dense) []float64 {
			e, err := g.Eval(mixture.Query{At: c0, X: x, Want: mixture.LogProb})
			if err != nil {
				t.Fatal(err)
			}
			return e.LogProb
		}
		byODE := func(rtol float64) func(*mat.Dense) []float64 {
			return func(x *mat.Dense) []float64 {
				res, err := likelihood.LogProbContext(ctx, x, exact, likelihood.Config{Schedule: mnist.Schedule(), RTol: rtol})
				if err != nil {
					t.Fatal(err)
				}
				return res.LogProb
			}
		}
		sMix := scoreAt(exact, x100)
		// h is in nats: the change of log p the step would make were c = 1.
		cClosed := fd(x100, sMix, 25, closed)
		cODE := fd(x100, sMix, 25, byODE(1e-4))
		t.Log("c = ∂_h log p(x + h s/‖s‖²), central differences at ±h nats, at the guided samples (t_min):")
		t.Log(row("  skip mixture, closed form", cClosed))
		t.Log(row("  skip mixture, its PF-ODE rtol 1e-4", cODE))
		for i := range cClosed {
			if math.Abs(cClosed[i]-1) > 0.01 || math.Abs(cODE[i]-1) > 0.05 {
				t.Errorf("sample %d: the finite difference misses c = 1 on the exact mixture: closed form %.4f, PF-ODE %.4f", i, cClosed[i], cODE[i])
			}
		}
		sNet := scoreAt(m, x100)
		// The network's log p is measured with Hutchinson probes on the
		// residual: the same probes on both sides of a difference, and other
		// probe seeds and a larger step say whether c is the probes' noise.
		for _, v := range []struct {
			seed uint64
			h    float64
		}{{cfg.Seed + 11, 25}, {cfg.Seed + 12, 25}, {cfg.Seed + 13, 25}, {cfg.Seed + 11, 100}} {
			cNet := fd(x100, sNet, v.h, func(x *mat.Dense) []float64 { return measure(t, x, 1e-4, v.seed) })
			t.Log(row(fmt.Sprintf("  network, PF-ODE 1e-4, probes %d, h %g", v.seed, v.h), cNet))
		}
		cos := make([]float64, n)
		for i := range cos {
			a, b := sNet.RawRowView(i), sMix.RawRowView(i)
			cos[i] = floats.Dot(a, b) / math.Sqrt(floats.Dot(a, a)*floats.Dot(b, b))
		}
		t.Log(row("  cos(network score, skip's score)", cos))
	})

	// The premise along the guided path: c_t = ∂_h log q_t(x_t + h s_t/‖s_t‖²)
	// at times t of the path (100 steps), with the network's log q_t by its
	// PF-ODE from t (dopri5 rtol 1e-4, the same probes on both sides) and
	// s_t its score there. The skip mixture's closed form at the same points,
	// along its own score, checks the finite difference at every t.
	t.Run("along", func(t *testing.T) {
		want := []float64{0.3, 0.1, 0.03, 0.01, 0.003, tMin}
		type point struct {
			t float64
			x *mat.Dense
		}
		var path []point
		if _, err := Sample(ctx, m, median.target, xT, start, SampleConfig{Schedule: mnist.Schedule(), Grid: GridLogSNR, Steps: 100}, func(tt float64, _ []float64, x *mat.Dense) {
			path = append(path, point{tt, mat.DenseCopyOf(x)})
		}); err != nil {
			t.Fatal(err)
		}
		_, g, err := models.SkipControlVariate(nets.Backend, nets.Store, mnist.Schedule(), nets.Net.DType, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		exact := score.Exact{Mixture: g}
		t.Log("c_t = ∂_h log q_t(x_t + h s_t/‖s_t‖²) along the guided path (median level, skip-hutchinson:4, RK4 100 steps), h = 25 nats:")
		for _, tw := range want {
			best := path[0]
			for _, p := range path { // the grid time nearest tw (in log t)
				if math.Abs(math.Log(p.t/tw)) < math.Abs(math.Log(best.t/tw)) {
					best = p
				}
			}
			ct, err := schedule.At(mnist.Schedule(), best.t)
			if err != nil {
				t.Fatal(err)
			}
			scoreAt := func(m score.Model) *mat.Dense {
				e, err := m.Eval(ct, best.x, score.WantScore)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Fill(ct, best.x, score.WantScore); err != nil {
					t.Fatal(err)
				}
				return e.Score
			}
			closed := func(x *mat.Dense) []float64 {
				e, err := g.Eval(mixture.Query{At: ct, X: x, Want: mixture.LogProb})
				if err != nil {
					t.Fatal(err)
				}
				return e.LogProb
			}
			cMix := fd(best.x, scoreAt(exact), 25, closed)
			meas, err := TraceModel(nets.Net, trace, cfg.Seed+11, access.PromptRows(mnist.Dim))
			if err != nil {
				t.Fatal(err)
			}
			byODE := func(x *mat.Dense) []float64 {
				res, err := likelihood.LogProbContext(ctx, x, meas, likelihood.Config{Schedule: mnist.Schedule(), T0: best.t, RTol: 1e-4})
				if err != nil {
					t.Fatal(err)
				}
				return res.LogProb
			}
			cNet := fd(best.x, scoreAt(m), 25, byODE)
			t.Logf("t = %.4g:", best.t)
			t.Log(row("  skip mixture, closed form", cMix))
			t.Log(row("  network, PF-ODE from t, rtol 1e-4", cNet))
			for i := range cMix {
				if math.Abs(cMix[i]-1) > 0.01 {
					t.Errorf("t = %.4g, sample %d: the finite difference misses c = 1 on the exact mixture: %.4f", best.t, i, cMix[i])
				}
			}
		}
	})

	// Where in t the gap arises: the median level with no guidance below u.
	t.Run("until", func(t *testing.T) {
		for _, u := range []float64{0.002, 0.005, 0.02} {
			run := guided(t, 100, u)
			tr, a := bpd(run.Ell), bpd(measure(t, run.X, 1e-4, cfg.Seed+11))
			gap := make([]float64, n)
			floats.SubTo(gap, a, tr)
			t.Logf("until %g:", u)
			t.Log(row("  tracked", tr))
			t.Log(row("  achieved (1e-4) − tracked", gap))
		}
	})
}
