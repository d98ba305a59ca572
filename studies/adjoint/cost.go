package adjoint

import (
	"context"
	"fmt"
	"runtime"
	"time"

	dfxtiming "github.com/dfx-lab/dfx/internal/timing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// CostRow is the cost of one guided step with one Fisher operator at one
// batch size: medians over interleaved rounds, in seconds.
type CostRow struct {
	Batch    int
	Operator string
	Forward  float64 // one ε-network forward of the batch (reference)
	Inner    float64 // the inner x̂₀ solve (InnerSteps forwards)
	Loss     float64 // the reward and its gradient at x̂₀
	Adjoint  float64 // the adjoint pass (InnerSteps Fisher products and DDIM transposes)
	Step     float64 // Inner + Loss + Adjoint, measured as one Gradient call
	// PerProduct is Adjoint / InnerSteps, and Marginal PerProduct / Forward:
	// what one Fisher product adds to a step whose ȳ and x̂₀ exist.
	PerProduct, Marginal float64
	// AllocMB is the Go heap allocated by one Gradient call (runtime
	// MemStats.TotalAlloc; GoMLX's Go backend allocates its buffers there),
	// CacheMB the inner trajectory the adjoint keeps (states and denoisers,
	// float64): O(InnerSteps × B × d), no graphs.
	AllocMB, CacheMB float64
}

// runCost times the guided step of each operator, interleaved, with the
// loss of the first reward, at a state of the window's first guided step.
func (gd *guidance) runCost(ctx context.Context) ([]CostRow, error) {
	cfg, s := gd.cfg, gd.p.Schedule
	lo, hi := s.Interval()
	grid, err := schedule.TimeGrid(s, schedule.GridUniform, lo, hi, cfg.Steps)
	if err != nil {
		return nil, err
	}
	at, err := schedule.At(s, grid[cfg.WindowEnd-cfg.maxGuided()])
	if err != nil {
		return nil, err
	}
	ops := []string{OperatorVJP, OperatorDFEA}
	var out []CostRow
	for _, b := range cfg.CostBatches {
		x := gd.p.InitialNoise(cfg.Seed, 0, b)
		x.Scale(at.Sigma/s.Sigma(hi), x)
		loss, err := gd.rw.Loss(cfg.Rewards[0], b)
		if err != nil {
			return nil, err
		}
		parts := make(map[string]func() ([]float64, error), len(ops))
		for _, op := range ops {
			parts[op] = func() ([]float64, error) { return gd.stepParts(op, at, x, loss) }
		}
		med, err := interleaved(ctx, cfg.CostRounds, ops, parts)
		if err != nil {
			return nil, fmt.Errorf("cost at batch %d: %w", b, err)
		}
		for _, op := range ops {
			m := med[op]
			r := CostRow{Batch: b, Operator: op, Forward: m[0], Inner: m[1], Loss: m[2], Adjoint: m[3], Step: m[4],
				AllocMB: m[5] / (1 << 20), CacheMB: float64((2*cfg.InnerSteps+1)*b*gd.p.Dim*8) / (1 << 20)}
			r.PerProduct = r.Adjoint / float64(cfg.InnerSteps)
			r.Marginal = r.PerProduct / r.Forward
			out = append(out, r)
		}
	}
	return out, nil
}

// stepParts measures one guided step with operator op at the states x
// (time at): the seconds of a forward, the inner solve, the loss, the
// adjoint pass and one whole Gradient call, and the bytes that call
// allocated.
func (gd *guidance) stepParts(op string, at schedule.Coefficients, x *mat.Dense, loss dfxadjoint.Loss) ([]float64, error) {
	o, err := gd.operator(op)
	if err != nil {
		return nil, err
	}
	model := access.NetModel{Net: gd.net}
	g := dfxadjoint.Guide{Schedule: gd.p.Schedule, Model: model, Operator: o, Loss: loss}
	var tr *dfxadjoint.Trajectory
	var grad *mat.Dense
	fwd := timeIt(func() error { _, err := model.Eval(at, x, score.WantEps); return err })
	inner := timeIt(func() (err error) { tr, err = g.Predict(x, at.T, gd.cfg.InnerSteps); return })
	if inner.err != nil {
		return nil, inner.err
	}
	ls := timeIt(func() (err error) { _, grad, err = loss(tr.Endpoint()); return })
	adj := timeIt(func() error { _, err := dfxadjoint.Backprop(tr, o, grad); return err })
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	step := timeIt(func() error { _, err := g.Gradient(x, at.T, gd.cfg.InnerSteps); return err })
	runtime.ReadMemStats(&ms)
	for _, e := range []error{fwd.err, ls.err, adj.err, step.err} {
		if e != nil {
			return nil, fmt.Errorf("%s: %w", op, e)
		}
	}
	return []float64{fwd.s, inner.s, ls.s, adj.s, step.s, float64(ms.TotalAlloc - before)}, nil
}

// interleaved times measure[name] for every name with internal/timing's
// interleaved rounds (one warm-up call each, not kept) and returns per name
// the median of each measured quantity over the rounds.
func interleaved(ctx context.Context, rounds int, names []string, measure map[string]func() ([]float64, error)) (map[string][]float64, error) {
	cases := make([]dfxtiming.Case, len(names))
	for i, n := range names {
		cases[i] = dfxtiming.Case{Name: n, Run: measure[n]}
	}
	got, err := dfxtiming.Interleaved(ctx, rounds, cases)
	if err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for _, c := range got {
		for m := range c.Values {
			out[c.Name] = append(out[c.Name], c.Median(m))
		}
	}
	return out, nil
}

type timing struct {
	s   float64
	err error
}

func timeIt(f func() error) timing {
	t := time.Now()
	err := f()
	return timing{time.Since(t).Seconds(), err}
}
