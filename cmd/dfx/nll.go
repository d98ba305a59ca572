package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/membudget"
	"github.com/dfx-lab/dfx/internal/progress"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"gonum.org/v1/gonum/mat"
)

const nllUsage = "usage: dfx nll (--gmm G.json|G.dfxckpt | --checkpoint FILE [--checkpoint FILE2] [--trace " +
	"vjp|skip-exact|hutchinson:K|hutchpp:K|skip-hutchinson:K|dftm|dftm-c]) --points X.csv|X.npy|IDX[.gz] [--schedule NAME: " +
	"required with --gmm; a checkpoint's own by default] [--solver dopri5|euler|heun|rk4] [flags]"

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// nllArgs are the parsed flags of `dfx nll`.
type nllArgs struct {
	gmm, points, trace, solver string
	checkpoints                listFlag
	s, rtol, atol              float64
	steps, batch               int
	seed                       seedFlag
	dequantize, header, asJSON bool
	exact                      bool
	solverError                bool
	set                        func(string) bool
	sched                      func() (schedule.Schedule, error)
	budget                     func() (membudget.Budget, error)
}

// runNLL is `dfx nll`: −log q_s(x) of points by the PF-ODE (paper eq.
// nll_ode, dfx/likelihood), under an analytic Gaussian mixture (exact score
// and trace) or a trained network with a chosen trace estimator.
func runNLL(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx nll", flag.ContinueOnError)
	a := nllArgs{}
	fs.StringVar(&a.gmm, "gmm", "", `analytic Gaussian mixture: JSON {"weights":[…],"means":[[…],…],"covs":[[[…]],…]} (full covariances), `+
		`or a .dfxckpt holding one (dfx fit's, or an ε-network's skip)`)
	fs.Var(&a.checkpoints, "checkpoint", `"weights" checkpoint of a score network; `+
		`repeat it to add the DF-TM (dftm) or centred DF-TM (nu) network from another file`)
	fs.StringVar(&a.trace, "trace", "vjp", "trace estimator of a --checkpoint network: vjp (exact, d VJPs), "+
		"hutchinson:K, hutchpp:K (K ≥ 3 matvecs), skip-hutchinson:K (a network with a mixture skip: the skip's exact "+
		"trace plus Hutchinson on the residual), skip-exact (a mixture skip with a patch residual, as the committed MNIST "+
		"network: the exact trace from its structure, far cheaper than d VJPs), dftm, dftm-c")
	fs.StringVar(&a.points, "points", "", "points x (N×d): CSV, .npy, or IDX images (.gz or not; scaled to [−1, 1]); - for stdin (CSV/.npy)")
	fs.BoolVar(&a.header, "header", false, "skip the first line of a CSV --points file")
	fs.Float64Var(&a.s, "s", 0, "start time s of the PF-ODE, in [t_min, T) (default: the schedule's t_min)")
	fs.StringVar(&a.solver, "solver", "dopri5", "solver: dopri5 (adaptive, --rtol/--atol), euler, heun, rk4 (--steps)")
	fs.IntVar(&a.steps, "steps", 100, "steps of a fixed-step solver (euler, heun, rk4)")
	fs.Float64Var(&a.rtol, "rtol", 1e-5, "relative tolerance of dopri5")
	fs.Float64Var(&a.atol, "atol", 1e-5, "absolute tolerance of dopri5")
	fs.BoolVar(&a.solverError, "solver-error", true, "estimate the solver's error by a second, coarser solve (half "+
		"the steps, or 32× the tolerances); costs ≈ 50% more")
	fs.BoolVar(&a.dequantize, "dequantize", false, "IDX images only: x = 2(p+u)/256 − 1 with u ~ U[0,1) from --seed (the bpd is then an upper bound)")
	a.seed = 1
	fs.Var(&a.seed, "seed", "seed of --dequantize and of hutchinson/hutchpp probes, an integer in [0, 2^64−1]")
	fs.IntVar(&a.batch, "batch", 64, "points integrated together (adaptive steps are shared by a batch)")
	fs.BoolVar(&a.asJSON, "json", false, "print JSON instead of a table")
	fs.BoolVar(&a.exact, "exact", false, "with --gmm: log q_s(x) in closed form (a diffused Gaussian mixture is one), no ODE and no solver error")
	a.sched = scheduleFlags(fs, "")
	a.budget = memoryFlag(fs)
	if code, ok := parseFlags(fs, args, stderr, "nll", nllUsage); !ok {
		return code
	}
	a.set = func(n string) bool { return isSet(fs, n) }
	job, err := prepareNLL(a)
	if err != nil {
		return fail(stderr, "nll", err)
	}
	start := time.Now()
	res, err := job.run(ctx, stderr)
	if err != nil {
		if errors.Is(err, likelihood.ErrInput) || errors.Is(err, mixture.ErrNonFinite) {
			return fail(stderr, "nll", err)
		}
		return failRun(stderr, "nll", err)
	}
	res.wall = time.Since(start)
	var buf strings.Builder
	if a.asJSON {
		err = writeNLLJSON(&buf, job, res)
	} else {
		err = writeNLLText(&buf, job, res)
	}
	if err == nil {
		_, err = io.WriteString(stdout, buf.String())
	}
	if err != nil {
		return failRun(stderr, "nll", err)
	}
	return 0
}

// solverByName maps --solver to a fixed-step tableau (nil for dopri5).
func solverByName(name string) (pfode.Method, bool, error) {
	m, err := pfode.ParseMethod(strings.ToLower(name))
	switch {
	case err == nil && m == pfode.Dopri5:
		return nil, true, nil
	case err == nil && m != pfode.DDIM:
		return m, false, nil
	}
	return nil, false, fmt.Errorf("unknown --solver %q (want dopri5, euler, heun, rk4)", name)
}

// solverFlags reads --solver and checks the flags that go with it:
// --steps (and --solver-error's ≥ 2 steps) for a fixed-step method,
// --rtol/--atol for dopri5.
func (a nllArgs) solverFlags() (pfode.Method, bool, error) {
	method, adaptive, err := solverByName(a.solver)
	if err != nil {
		return nil, false, err
	}
	if adaptive && a.set("steps") {
		return nil, false, errors.New("--solver dopri5 is adaptive and would ignore --steps (set --rtol/--atol, or choose euler, heun or rk4)")
	}
	if !adaptive {
		var ignored []string
		for _, f := range []string{"rtol", "atol"} {
			if a.set(f) {
				ignored = append(ignored, "--"+f)
			}
		}
		if len(ignored) > 0 {
			return nil, false, fmt.Errorf("--solver %s takes --steps and would ignore %s (they apply to dopri5)", a.solver, strings.Join(ignored, " and "))
		}
		if a.steps < 1 {
			return nil, false, fmt.Errorf("--steps must be at least 1, got %d", a.steps)
		}
		if a.steps < 2 && a.solverError && a.set("solver-error") {
			return nil, false, errors.New("--solver-error needs --steps ≥ 2 (it compares with half the steps)")
		}
		return method, adaptive, nil
	}
	if err := finite("rtol", a.rtol, 0, false); err != nil {
		return nil, false, err
	}
	if err := finite("atol", a.atol, 0, false); err != nil {
		return nil, false, err
	}
	if a.rtol >= 1 {
		return nil, false, fmt.Errorf("--rtol must be < 1, got %g", a.rtol)
	}
	return method, adaptive, nil
}

// prepareNLL checks every flag and reads every input: all that can be bad
// input is found here, before any integration.
func prepareNLL(a nllArgs) (*nllJob, error) {
	if err := a.checkModelFlags(); err != nil {
		return nil, err
	}
	method, adaptive, err := a.solverFlags()
	if err != nil {
		return nil, err
	}
	if a.batch < 1 {
		return nil, fmt.Errorf("--batch must be at least 1, got %d", a.batch)
	}
	tr, err := parseTrace(a.trace)
	if err != nil {
		return nil, err
	}
	if a.set("seed") && !a.dequantize && !(a.gmm == "" && tr.random()) {
		return nil, errors.New("--seed applies to --dequantize and to --trace hutchinson/hutchpp/skip-hutchinson: nothing else here is random")
	}
	if a.set("s") {
		if err := finite("s", a.s, 0, true); err != nil {
			return nil, err
		}
	}
	s, err := nllSchedule(a)
	if err != nil {
		return nil, err
	}
	start, hi, err := a.interval(s)
	if err != nil {
		return nil, err
	}
	budget, err := a.budget()
	if err != nil {
		return nil, err
	}
	pts, err := readNLLPoints(a, budget)
	if err != nil {
		return nil, err
	}
	job := &nllJob{sched: s, s: start, T: hi, method: method, adaptive: adaptive, steps: a.steps,
		rtol: a.rtol, atol: a.atol, batch: a.batch, pts: pts, estimate: a.solverError}
	if !adaptive && a.steps < 2 {
		job.estimate = false
	}
	if a.exact {
		if err := a.checkExact(); err != nil {
			return nil, err
		}
		job.exact, job.estimate = true, false
	}
	n, d := pts.x.Dims()
	if a.gmm != "" {
		if job.model, err = loadGMM(a.gmm, d, s, budget); err != nil {
			return nil, err
		}
	} else if job.model, err = loadNetModel(a.checkpoints, tr, d, s, uint64(a.seed)); err != nil {
		return nil, err
	}
	need := nllBytes(n, d, min(a.batch, n), job.model)
	if err := budget.Check(fmt.Sprintf("%d points of dimension %d in batches of %d (%s)", n, d, min(a.batch, n), job.model.describe()), need,
		"pass a smaller --batch, or fewer --points at a time"); err != nil {
		return nil, err
	}
	return job, nil
}

// checkModelFlags checks that one model is given (--gmm or --checkpoint),
// with the points, and that at most one of them reads stdin.
func (a nllArgs) checkModelFlags() error {
	switch {
	case a.gmm != "" && len(a.checkpoints) > 0:
		return errors.New("--gmm and --checkpoint are exclusive: give one model")
	case a.gmm == "" && len(a.checkpoints) == 0:
		return errors.New("give a model: --gmm G.json or --checkpoint FILE")
	case a.gmm != "" && a.set("trace"):
		return errors.New("--trace conflicts with --gmm: a Gaussian mixture's trace is exact (--trace applies to --checkpoint)")
	case a.points == "":
		return errors.New("--points is required")
	}
	if a.points == "-" && a.gmm == "-" {
		return errors.New("only one of --gmm, --points can read stdin (-)")
	}
	return nil
}

// interval is the integration interval [s, T) on schedule sch: from
// --s, or from t_min when it is not set.
func (a nllArgs) interval(sch schedule.Schedule) (start, end float64, err error) {
	lo, hi := sch.Interval()
	if !a.set("s") {
		return lo, hi, nil
	}
	if !(a.s >= lo && a.s < hi) {
		return 0, 0, fmt.Errorf("--s %g is outside [t_min, T) = [%g, %g) of the %s schedule", a.s, lo, hi, sch.Name())
	}
	return a.s, hi, nil
}

// checkExact checks that --exact comes with --gmm and without the
// solver's flags.
func (a nllArgs) checkExact() error {
	if a.gmm == "" {
		return errors.New("--exact applies to --gmm (a network's log q needs the ODE)")
	}
	for _, f := range []string{"solver", "steps", "rtol", "atol", "solver-error", "batch"} {
		if a.set(f) {
			return fmt.Errorf("--%s has no effect with --exact (no ODE is solved; it would be ignored)", f)
		}
	}
	return nil
}

// nllBytes estimates the peak memory: the points and their outputs, per
// batch the ODE state (d + 1 per point) times the solver's stages and
// copies (≈ 20, both solves), and the model's own working set.
func nllBytes(n, d, batch int, m nllModel) float64 {
	fn, fd, fb := float64(n), float64(d), float64(batch)
	return 8*fn*fd*2 + 8*fn*8 + 8*fb*(fd+1)*20 + m.bytes(batch)
}

// nllJob is one checked `dfx nll` run.
type nllJob struct {
	sched      schedule.Schedule
	s, T       float64
	method     pfode.Method
	adaptive   bool
	steps      int
	rtol, atol float64
	batch      int
	estimate   bool
	exact      bool // --exact: the mixture's log q_s in closed form
	pts        *nllPoints
	model      nllModel
}

// nllResult is what a run found.
type nllResult struct {
	logProb, solverErr []float64 // [N]; solverErr nil without an estimate
	nfe                []int     // dynamics evaluations of each point's batch
	stats              pfode.Stats
	prior              string
	wall               time.Duration
}

// run integrates the points batch by batch, showing progress on stderr.
func (j *nllJob) run(ctx context.Context, stderr io.Writer) (*nllResult, error) {
	n, d := j.pts.x.Dims()
	out := &nllResult{logProb: make([]float64, n), nfe: make([]int, n)}
	if j.estimate {
		out.solverErr = make([]float64, n)
	}
	meter := progress.New(stderr, "dfx nll", "points", n)
	meter.Delay = time.Second
	defer meter.Done()
	if j.exact {
		return j.runExact()
	}
	evals, done := 0, 0
	dyn := countingModel{inner: j.model.dynamics(), tick: func() {
		evals++
		meter.Set(done, fmt.Sprintf("%d evaluations", evals))
	}}
	cfg := likelihood.Config{Schedule: j.sched, T0: j.s, T1: j.T, Steps: j.steps, Solver: j.method, EstimateError: j.estimate}
	if j.adaptive {
		cfg.RTol, cfg.ATol = j.rtol, j.atol
	}
	for first := 0; first < n; first += j.batch {
		end := min(first+j.batch, n)
		x := mat.DenseCopyOf(j.pts.x.Slice(first, end, 0, d))
		res, err := likelihood.LogProbContext(ctx, x, dyn, cfg)
		if err != nil {
			return nil, err
		}
		copy(out.logProb[first:end], res.LogProb)
		if j.estimate {
			copy(out.solverErr[first:end], res.SolverError)
		}
		for i := first; i < end; i++ {
			out.nfe[i] = res.Evals
		}
		out.stats.Add(res.Stats)
		done = end
		meter.Set(done, fmt.Sprintf("%d evaluations", evals))
	}
	c, err := schedule.At(j.sched, j.T)
	if err != nil {
		return nil, err
	}
	out.prior = fmt.Sprintf("N(0, σ_T² I), σ_T = %.6g (q_T's mismatch with it is not corrected)", c.Sigma)
	if math.IsNaN(c.Sigma) {
		return nil, errors.New("σ(T) is not a number")
	}
	return out, nil
}

// nllSchedule is --schedule, or without it the schedule a --checkpoint
// network was trained on (its provenance): a checkpoint says what it is.
func nllSchedule(a nllArgs) (schedule.Schedule, error) {
	if a.set("schedule") || a.gmm != "" || len(a.checkpoints) == 0 {
		return a.sched()
	}
	c, err := checkpoint.Read(a.checkpoints[0])
	if err != nil {
		return nil, fmt.Errorf("--checkpoint: %w", err)
	}
	if p := c.Header.Provenance; p != nil && p.Schedule != nil {
		return p.Schedule.Schedule()
	}
	return nil, fmt.Errorf("--checkpoint %s records no schedule: give --schedule (%s)", a.checkpoints[0], strings.Join(schedule.Names, "|"))
}

// runExact is --exact: log q_s(x) of the --gmm mixture in closed form.
func (j *nllJob) runExact() (*nllResult, error) {
	n, _ := j.pts.x.Dims()
	c, err := schedule.At(j.sched, j.s)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := j.model.mixture.Eval(mixture.Query{At: c, X: j.pts.x, Want: mixture.LogProb})
	if err != nil {
		return nil, err
	}
	out := &nllResult{logProb: res.LogProb, nfe: make([]int, n), prior: "none (log q_s in closed form, no ODE)", wall: time.Since(start)}
	return out, nil
}
