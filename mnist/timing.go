package mnist

import (
	"context"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
)

// TimingRow is one method at one batch size: the median wall time of one
// call over interleaved rounds.
type TimingRow struct {
	Kind    string // "trace" or "operator"
	Method  string
	Batch   int
	Seconds float64 // median per call (per batch)
	Rounds  int
	Note    string
}

// TimingResult is the Table 1 analogue.
type TimingResult struct {
	T    float64 // the time of the queries
	Rows []TimingRow
}

// Get returns the row of a method at a batch size (nil if not measured).
func (r *TimingResult) Get(method string, batch int) *TimingRow {
	for i := range r.Rows {
		if r.Rows[i].Method == method && r.Rows[i].Batch == batch {
			return &r.Rows[i]
		}
	}
	return nil
}

// RunTiming times every trace estimator and F·v operator at batch 1 and 64
// on noisy training images at t = 0.5, in interleaved rounds (each method
// once per round, after a warm-up call that compiles its graph).
func RunTiming(ctx context.Context, nets *Networks, cfg Config, train *Set) (*TimingResult, error) {
	const t = 0.5
	res := &TimingResult{T: t}
	n := nets.Net
	tr, err := newTraces(n, cfg.Seed)
	if err != nil {
		return nil, err
	}
	vjp, h1, h16, hpp, dftm, dftmc, vm, ea := tr.vjp, tr.h1, tr.h16, tr.hpp, tr.dftm, tr.dftmc, tr.matvec, tr.endpoint
	at, err := schedule.At(n.Schedule, t)
	if err != nil {
		return nil, err
	}
	a, s := at.Alpha, at.Sigma
	for _, b := range cfg.TimingBatches {
		x0, err := train.Scaled(0, b)
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(b)))
		x, v := mat.NewDense(b, Dim, nil), mat.NewDense(b, Dim, nil)
		for i := range b {
			for j := range Dim {
				x.Set(i, j, a*x0.At(i, j)+s*rng.NormFloat64())
				v.Set(i, j, rng.NormFloat64())
			}
		}
		ybar, err := n.DenoiserAt(at, x)
		if err != nil {
			return nil, err
		}
		traceOf := func(e score.TraceEstimator) func() error {
			return func() error { _, err := e.Trace(at, x); return err }
		}
		ms := []timedMethod{
			{"trace", "vjp-exact", traceOf(vjp), cfg.TimingRounds, "d = 784 VJPs per point, batched"},
			{"trace", "hutchinson-1", traceOf(h1), cfg.TimingRounds, "1 Rademacher probe"},
			{"trace", "hutchinson-16", traceOf(h16), cfg.TimingRounds, "16 Rademacher probes"},
			{"trace", "hutch++-48", traceOf(hpp), cfg.TimingRounds, "48 matvecs (16 sketch + 16 + 16)"},
			{"trace", "df-tm", traceOf(dftm), cfg.TimingRounds, "ε-net + t_θ forward"},
			{"trace", "df-tm-c", traceOf(dftmc), cfg.TimingRounds, "ν_θ forward"},
			{"operator", "forward", func() error { _, err := n.EpsAt(at, x); return err }, cfg.TimingRounds, "one ε-network pass (reference)"},
			{"operator", "vjp-matvec", func() error { _, err := vm.Apply(score.State{At: at, X: x}, v); return err }, cfg.TimingRounds, "one VJP (eq. Adjoint_VJP)"},
			{"operator", "df-ea", func() error { _, err := ea.Apply(score.State{At: at, X: x, Endpoint: x0}, v); return err }, cfg.TimingRounds, "standalone: ε-net forward + rank-2 update"},
			{"operator", "df-ea-marginal", func() error { _, err := access.DFEAApply(ybar, x0, v, a, s); return err }, cfg.TimingRounds, "inside a sampler step: ȳ_θ already computed"},
		}
		if b == 64 {
			if cfg.ExactAt64 {
				ms[0].rounds = 1
				ms[0].note += "; one round (≈ 50 000 VJPs)"
			} else {
				ms = ms[1:]
			}
		}
		times, err := timeMethods(ctx, ms, cfg.TimingRounds)
		if err != nil {
			return nil, err
		}
		for i, m := range ms {
			res.Rows = append(res.Rows, TimingRow{Kind: m.kind, Method: m.name, Batch: b, Seconds: stats.Median(times[i]), Rounds: len(times[i]), Note: m.note})
		}
	}
	return res, nil
}

// timedMethod is one row of the timing table: what it calls and how often.
type timedMethod struct {
	kind, name string
	f          func() error
	rounds     int
	note       string
}

// timeMethods calls every method once to compile it, then times up to
// rounds calls of each, interleaved round by round; it returns each
// method's seconds per call.
func timeMethods(ctx context.Context, ms []timedMethod, rounds int) ([][]float64, error) {
	times := make([][]float64, len(ms))
	for _, m := range ms { // warm-up: compile
		if err := m.f(); err != nil {
			return nil, err
		}
	}
	for r := range rounds {
		for i, m := range ms {
			if r >= m.rounds {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			start := time.Now()
			if err := m.f(); err != nil {
				return nil, err
			}
			times[i] = append(times[i], time.Since(start).Seconds())
		}
	}
	return times, nil
}
