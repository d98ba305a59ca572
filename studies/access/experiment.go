package access

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	dfxaccess "github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/problem"
	"github.com/dfx-lab/dfx/toys"
)

// Config is one run of the Table 2 experiment on a toy problem: its data
// set and networks (toys.ProblemConfig), and what is measured.
type Config struct {
	toys.ProblemConfig

	// Times are the table's times; 0 stands for the schedule's TMin.
	Times []float64
	// CurveTimes is the number of times, uniform in t over the interval,
	// of the error-versus-t figure.
	CurveTimes int
	// EvalPoints points x_t ~ q_t are drawn per time and per evaluation seed.
	EvalPoints int
	EvalSeeds  []uint64

	// NLL: NLLPoints points x_t ~ q_t per table time, integrated from t to T
	// with NLLSteps steps of NLLSolver.
	NLLPoints int
	NLLSteps  int
	NLLSolver likelihood.Solver

	// Learned turns on the networks (score, DF-TM and centred DF-TM);
	// without it only the exact side runs.
	Learned bool

	// Figures: heat maps at HeatTimes on a HeatGrid² grid over
	// [−HeatExtent, HeatExtent]²; Samples points drawn by SampleSteps Heun steps.
	HeatTimes   []float64
	HeatGrid    int
	HeatExtent  float64
	Samples     int
	SampleSteps int

	// Timing: per-query cost measured on batches of TimingBatch points.
	TimingBatch int
}

// Quick is the CI profile: small networks, a few hundred steps, the whole
// pipeline in well under 3 minutes.
func Quick() Config {
	return Config{
		ProblemConfig: toys.QuickProblem("checkerboard"),
		Times:         []float64{1, 0.8, 0.6, 0.4, 0.2, 0}, CurveTimes: 11,
		EvalPoints: 256, EvalSeeds: []uint64{1, 2},
		NLLPoints: 64, NLLSteps: 50, NLLSolver: likelihood.Heun,
		Learned:   true,
		HeatTimes: []float64{0.2, 0.4, 0.6}, HeatGrid: 40, HeatExtent: 5,
		Samples: 1000, SampleSteps: 100, TimingBatch: 256,
	}
}

// Full is the profile of the published table: the paper's 5 000 points,
// three training seeds for the bands, the committed checkpoints
// (toys/checkpoints, compiled in).
func Full() Config {
	c := Quick()
	c.CurveTimes = 21
	c.EvalPoints, c.EvalSeeds = 1000, []uint64{1, 2, 3}
	c.NLLPoints, c.NLLSteps, c.NLLSolver = 200, 100, likelihood.RK4
	c.ProblemConfig = toys.Published("checkerboard")
	c.HeatGrid, c.Samples, c.SampleSteps = 80, 3000, 200
	c.HeatTimes = []float64{0.1, 0.2, 0.4, 0.6}
	return c
}

// Result is everything Run measured; Report turns it into tables and figures.
type Result struct {
	Config    Config
	Schedule  schedule.Schedule
	Data      *mat.Dense
	Rows      []Row            // Table 2, one row per Config.Times entry
	Curve     []Row            // the same errors on CurveTimes times
	Losses    []toys.LossCurve // training losses per network
	Timing    []Timing
	Heat      []HeatField
	Samples   *mat.Dense // model samples (nil without networks)
	Elapsed   time.Duration
	Methods   []string // the trace methods measured, "exact" first
	NetsNotes string   // how the networks were obtained (trained / loaded)
}

// Stat is a mean and a standard deviation over seeds.
type Stat struct{ Mean, Std float64 }

// Row holds the errors at one time.
type Row struct {
	T, Sigma  float64
	ExactTr   Stat            // mean exact tr F over the points
	TraceErr  map[string]Stat // relative error of tr F per method
	ScoreErr  Stat            // relative L2 error of the learned score
	TNetErr   Stat            // relative error of t_θ against E[‖x₀‖²|x_t]/d
	ExactNLL  float64         // mean exact −log q_t(x_t), nats
	NLLErr    map[string]float64
	SolverErr map[string]float64 // mean step-halving estimate of the NLL error
}

// Learned is one trained network set the Table 2 study scores: the
// networks in dfx/access's contract, their trace estimators and models by
// method (MethodVJP, MethodDFTM, MethodDFTMC) and a sampler of d = 2 points.
type Learned interface {
	Net() *dfxaccess.Net
	Trace(method string) (score.TraceEstimator, error)
	Traces(c schedule.Coefficients, x *mat.Dense, methods ...string) (map[string][]float64, error)
	Model(method string) (score.Model, error)
	Sample(m, steps int, seed uint64) (*mat.Dense, error)
}

// Run computes the Table 2 experiment on cfg's toy problem (its networks
// loaded or trained where cfg.Learned); log receives progress lines.
func Run(ctx context.Context, cfg Config, log io.Writer) (*Result, error) {
	start := time.Now()
	if log == nil {
		log = io.Discard
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	p, err := cfg.Problem()
	if err != nil {
		return nil, err
	}
	data, err := p.Train(ctx)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Schedule: p.Schedule, Data: data, Methods: []string{MethodExact}}
	var nets []Learned
	if cfg.Learned {
		l, err := toys.ObtainNetworks(ctx, cfg.ProblemConfig, p.Schedule, data, log)
		if err != nil {
			return nil, err
		}
		for _, n := range l.Nets {
			nets = append(nets, n)
		}
		res.Losses, res.NetsNotes = l.Losses, l.Notes
		res.Methods = append(res.Methods, MethodVJP, MethodDFTM, MethodDFTMC)
	}
	if err := runTable(ctx, p, nets, res, log); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// runTable fills res (its Config, Data and Methods set) with the errors of
// nets against p's exact mixture, the heat fields, samples and timings.
func runTable(ctx context.Context, p *problem.Problem, nets []Learned, res *Result, log io.Writer) error {
	cfg, sch := res.Config, p.Schedule
	mix, err := p.Exact(ctx)
	if err != nil {
		return fmt.Errorf("access: %w", err)
	}
	ev := &evaluator{cfg: cfg, sch: sch, mix: mix, data: res.Data, nets: nets}
	lo, hi := sch.Interval()
	for _, t := range cfg.Times {
		if err := ctx.Err(); err != nil {
			return err
		}
		tt := clampTime(t, lo, hi)
		row, err := ev.row(tt, true)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "toys: t = %.3g (σ = %.3g): %s\n", tt, sch.Sigma(tt), row.summary(res.Methods))
		res.Rows = append(res.Rows, row)
	}
	for i := 0; i < cfg.CurveTimes; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		tt := lo + (hi-lo)*float64(i)/float64(cfg.CurveTimes-1)
		row, err := ev.row(tt, false)
		if err != nil {
			return err
		}
		res.Curve = append(res.Curve, row)
	}
	if res.Heat, err = ev.heatFields(); err != nil {
		return err
	}
	if len(nets) > 0 {
		if res.Samples, err = nets[0].Sample(cfg.Samples, cfg.SampleSteps, cfg.DataSeed+100); err != nil {
			return err
		}
	}
	res.Timing, err = ev.timing()
	return err
}

func (c Config) check() error {
	switch {
	case c.N < 1:
		return fmt.Errorf("toys: N = %d, need ≥ 1", c.N)
	case len(c.Times) == 0:
		return fmt.Errorf("toys: no table times")
	case c.CurveTimes < 2:
		return fmt.Errorf("toys: CurveTimes = %d, need ≥ 2", c.CurveTimes)
	case c.EvalPoints < 1 || len(c.EvalSeeds) == 0:
		return fmt.Errorf("toys: need EvalPoints ≥ 1 and at least one EvalSeeds entry")
	case c.NLLPoints < 1 || c.NLLSteps < 2:
		return fmt.Errorf("toys: need NLLPoints ≥ 1 and NLLSteps ≥ 2")
	case c.Learned && len(c.TrainSeeds) == 0:
		return fmt.Errorf("toys: Learned needs at least one TrainSeeds entry")
	case c.HeatGrid < 2 || c.TimingBatch < 1:
		return fmt.Errorf("toys: need HeatGrid ≥ 2 and TimingBatch ≥ 1")
	}
	return nil
}

// clampTime maps 0 (and anything below) to TMin and caps at TMax.
func clampTime(t, lo, hi float64) float64 { return math.Min(math.Max(t, lo), hi) }

func (r Row) summary(methods []string) string {
	s := fmt.Sprintf("mean tr F %.4g", r.ExactTr.Mean)
	for _, m := range methods {
		if m == "exact" {
			continue
		}
		s += fmt.Sprintf(", %s tr %.2f%% NLL %.2f%%", m, 100*r.TraceErr[m].Mean, 100*r.NLLErr[m])
	}
	if len(methods) > 1 {
		s += fmt.Sprintf(", score %.2f%%", 100*r.ScoreErr.Mean)
	}
	return s + fmt.Sprintf(", exact-trace NLL %.3g%%", 100*r.NLLErr["exact"])
}
