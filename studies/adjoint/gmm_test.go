package adjoint

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/toys"
)

func logGMM(t *testing.T, r *GMMResult) {
	t.Helper()
	t.Logf("train %v loss %.4g, total %v, target dist %.3g", r.TrainTime, r.TrainLoss, r.Elapsed, r.TargetDist)
	for _, s := range r.Steps {
		t.Logf("k=%d t=%.3f σ=%.3f |λ*|=%.3g epsErr=%.3g |F|=%.3g", s.Step, s.T, s.Sigma, s.GradNormExact.Mean, s.NetEpsRelErr.Mean, s.FisherHS.Mean)
		for _, m := range GMMMethods {
			t.Logf("   %-16s cos %.4f±%.4f rel %.3g±%.2g hs %.3g", m, s.Cos[m].Mean, s.Cos[m].SE, s.RelErr[m].Mean, s.RelErr[m].SE, s.HS[m].Mean)
		}
	}
	for _, w := range r.Rewards {
		t.Logf("%-20s reward %.4g ± %.3g  log q %.4g ± %.3g  %v/sample near %.2f", w.Method, w.Reward.Mean, w.Reward.SE, w.LogProb.Mean, w.LogProb.SE, w.PerSample, w.NearTarget)
	}
}

// TestGMMFullProfile runs GMMFull when DFX_GMM_FULL is set
// (minutes) and writes its report into DFX_GMM_OUT when that is set.
func TestGMMFullProfile(t *testing.T) {
	if os.Getenv("DFX_GMM_FULL") == "" {
		t.Skip("set DFX_GMM_FULL=1 to run the full profile")
	}
	start := time.Now()
	r, err := RunGMM(context.Background(), GMMFull())
	if err != nil {
		t.Fatal(err)
	}
	logGMM(t, r)
	t.Logf("full profile: %v", time.Since(start))
	if dir := os.Getenv("DFX_GMM_OUT"); dir != "" {
		rep, err := r.Report()
		if err != nil {
			t.Fatal(err)
		}
		if err := report.WriteDir(context.Background(), rep, dir); err != nil {
			t.Fatal(err)
		}
	}
}

// smallGMM is a 2-component problem in d = 5 with its guides (no network)
// and the states of the exact guided path.
func smallGMM(t *testing.T) (*toys.GMM, map[string]dfxadjoint.Guide, []pathState, *mat.Dense, dfxadjoint.Config, *mat.Dense) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 5))
	p, err := toys.NewGMM(5, 2, rng)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.DefaultVP()
	gs := operatorGuides(s, p.Mix, nil, nil, dfxadjoint.SquaredDistance(p.Target), gmmNames)
	xT := schedule.SamplePrior(schedule.Prior(s), 6, 5, rng)
	cfg := dfxadjoint.Config{Steps: 12, From: 3, To: 9, InnerSteps: 3, Strength: 0.3, Normalize: true}
	states, final, err := guidedPath(context.Background(), gs[GMMExact], xT, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, gs, states, final, cfg, xT
}

// TestGuidedPathIsGuideSample checks that the replayed exact guided path
// ends on dfxadjoint.Guide.Sample's samples bit for bit and yields one state
// per guided step.
func TestGuidedPathIsGuideSample(t *testing.T) {
	_, gs, states, final, cfg, xT := smallGMM(t)
	r, err := gs[GMMExact].Sample(context.Background(), xT, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(r.X, final) {
		t.Errorf("replayed path ends at %v, Guide.Sample at %v", mat.Formatted(final), mat.Formatted(r.X))
	}
	if len(states) != cfg.To-cfg.From || states[0].Step != cfg.From {
		t.Errorf("%d states from step %d, want %d from %d", len(states), states[0].Step, cfg.To-cfg.From, cfg.From)
	}
}

// TestHSErrorsMatchDenseOperators checks the HS routines against dense
// matrices built independently: DF-EA's through access.DFEA (access.DFEAApply)
// on the basis vectors, and the Exact operator's, which must be the full
// Fisher (HS error 0 to round-off); and that scoreState's DF-EA errors are
// hsErrorEA of the inner solve's endpoint and first denoiser.
func TestHSErrorsMatchDenseOperators(t *testing.T) {
	p, gs, states, _, cfg, _ := smallGMM(t)
	for _, st := range states {
		row, err := scoreState(p.Mix, nil, gs, st, cfg.InnerSteps)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := p.Mix.Eval(mixture.Query{At: st.At, X: st.X, Want: mixture.Full})
		if err != nil {
			t.Fatal(err)
		}
		gr, err := gs[GMMEAExact].Gradient(st.X, st.At.T, cfg.InnerSteps)
		if err != nil {
			t.Fatal(err)
		}
		full := score.State{At: st.At, X: st.X, Denoiser: gr.Trajectory.Denoisers[0], Endpoint: gr.Trajectory.Endpoint()}
		ea, err := access.OperatorMatrix(access.DFEA{}, full)
		if err != nil {
			t.Fatal(err)
		}
		exc, err := access.OperatorMatrix(score.Exact{Mixture: p.Mix}, full)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for i := range ea {
			fn := hsNorm(ex.Fisher[i])
			got := hsErrorEA(ex.Fisher[i], full.Endpoint.RawRowView(i), full.Denoiser.RawRowView(i), st.At)
			want := hsErrorDense(ex.Fisher[i], ea[i])
			if math.Abs(got-want) > 1e-10*fn {
				t.Errorf("t=%g row %d: hsErrorEA %g, dense DF-EA %g", st.At.T, i, got, want)
			}
			if e := hsErrorDense(ex.Fisher[i], exc[i]); e > 1e-12*fn {
				t.Errorf("t=%g row %d: exact operator's matrix is %g from the full Fisher (‖F‖ %g)", st.At.T, i, e, fn)
			}
			sum += got
		}
		if m := row.HS[GMMEAExact].Mean; math.Abs(m-sum/float64(len(ea))) > 1e-10*m {
			t.Errorf("t=%g: scoreState's DF-EA HS error %g, recomputed %g", st.At.T, m, sum/float64(len(ea)))
		}
		if c := row.Cos[GMMExact]; math.Abs(c.Mean-1) > 1e-12 || row.RelErr[GMMExact].Mean > 1e-12 {
			t.Errorf("t=%g: exact against exact: cosine %v, relative error %v", st.At.T, c, row.RelErr[GMMExact])
		}
	}
}

// TestHSErrorEAZeroForADirac checks that for a single Dirac component
// (zero covariance) F = I/σ² exactly and F_EA with x̂₀ = ȳ = the Dirac's
// location is F, so the HS error is 0 to round-off; and that moving x̂₀
// off ȳ by δ gives (α²/σ⁴)‖x̂₀x̂₀ᵀ − ȳȳᵀ‖_F.
func TestHSErrorEAZeroForADirac(t *testing.T) {
	const d = 6
	rng := rand.New(rand.NewPCG(8, 1))
	mu := mat.NewDense(1, d, nil)
	for j := range d {
		mu.Set(0, j, rng.NormFloat64())
	}
	mix, err := mixture.NewGaussian(mu, []*mat.SymDense{mat.NewSymDense(d, nil)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.DefaultVP()
	for _, tm := range []float64{0.1, 0.5, 0.9} {
		c, _ := schedule.At(s, tm)
		x := mat.NewDense(3, d, nil)
		for i := range 3 {
			for j := range d {
				x.Set(i, j, c.Alpha*mu.At(0, j)+c.Sigma*rng.NormFloat64())
			}
		}
		ex, err := mix.Eval(mixture.Query{At: c, X: x, Want: mixture.Full | mixture.Denoiser})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			y := ex.Denoiser.RawRowView(i)
			fn := hsNorm(ex.Fisher[i])
			if e := hsErrorEA(ex.Fisher[i], y, y, c); e > 1e-12*fn {
				t.Errorf("t=%g row %d: HS error %g with x̂₀ = ȳ (‖F‖ %g)", tm, i, e, fn)
			}
			x0 := append([]float64(nil), y...)
			x0[0] += 0.01
			var want float64
			for a := range d {
				for b := range d {
					v := x0[a]*x0[b] - y[a]*y[b]
					want += v * v
				}
			}
			s2 := c.Sigma * c.Sigma
			want = c.Alpha * c.Alpha / (s2 * s2) * math.Sqrt(want)
			if got := hsErrorEA(ex.Fisher[i], x0, y, c); math.Abs(got-want) > 1e-9*want {
				t.Errorf("t=%g row %d: HS error %g with x̂₀ moved, want %g", tm, i, got, want)
			}
		}
	}
}

// TestGMMQuick runs the quick profile: it must take seconds, give
// finite numbers everywhere, cosine 1 for exact against exact, a better
// reward for exact guidance than for unguided sampling, and a report that
// passes report.Check with figures that render.
func TestGMMQuick(t *testing.T) {
	start := time.Now()
	r, err := RunGMM(context.Background(), GMMQuick())
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	logGMM(t, r)
	if el > 60*time.Second {
		t.Errorf("quick profile took %v", el)
	}
	cfg := r.Config
	if len(r.Steps) != cfg.To-cfg.From {
		t.Fatalf("%d steps scored, want %d", len(r.Steps), cfg.To-cfg.From)
	}
	fin := func(what string, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s is %v", what, v)
		}
	}
	for _, s := range r.Steps {
		fin("σ", s.Sigma)
		fin("‖F‖", s.FisherHS.Mean)
		fin("net ε error", s.NetEpsRelErr.Mean)
		for _, m := range GMMMethods {
			for _, v := range []MeanSE{s.Cos[m], s.RelErr[m]} {
				fin(m, v.Mean)
				fin(m, v.SE)
			}
		}
		for _, m := range gmmHSMethods {
			h, ok := s.HS[m]
			if !ok {
				t.Errorf("t=%g: no HS error for %s", s.T, m)
			}
			fin(m+" HS", h.Mean)
		}
		if c := s.Cos[GMMExact].Mean; math.Abs(c-1) > 1e-12 {
			t.Errorf("t=%g: exact against exact cosine %v", s.T, c)
		}
	}
	rw := map[string]GMMReward{}
	for _, w := range r.Rewards {
		fin(w.Method+" reward", w.Reward.Mean)
		fin(w.Method+" log q", w.LogProb.Mean)
		rw[w.Method] = w
	}
	if len(rw) != 6 {
		t.Errorf("%d samplers, want 6", len(rw))
	}
	if rw[GMMExact].Reward.Mean <= rw[GMMUnguided].Reward.Mean {
		t.Errorf("exact guidance reward %v not above unguided %v", rw[GMMExact].Reward, rw[GMMUnguided].Reward)
	}
	rep, err := r.Report()
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	for _, fg := range rep.Figures {
		if b, err := fg.PNG(); err != nil || len(b) < 1000 {
			t.Errorf("figure %s: %d bytes, %v", fg.Name, len(b), err)
		}
	}
	if testing.Verbose() {
		t.Log(rep.Tables[0].Markdown())
	}
}
