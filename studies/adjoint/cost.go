package adjoint

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/adjoint"
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
func runCost(ctx context.Context, nets *Networks, rw *rewardSet, cfg AdjointConfig) ([]CostRow, error) {
	s := Schedule()
	lo, hi := s.Interval()
	grid, err := schedule.TimeGrid(s, schedule.GridUniform, lo, hi, cfg.Steps)
	if err != nil {
		return nil, err
	}
	at, err := schedule.At(s, grid[cfg.WindowEnd-cfg.maxGuided()])
	if err != nil {
		return nil, err
	}
	model := access.NetModel{Net: nets.Net}
	var out []CostRow
	for _, b := range cfg.CostBatches {
		x := InitialNoise(cfg.Seed, 0, b)
		x.Scale(at.Sigma/s.Sigma(hi), x)
		loss, err := rw.loss(cfg.Rewards[0], b)
		if err != nil {
			return nil, err
		}
		ops := []string{OperatorVJP, OperatorDFEA}
		samples := map[string]*[7][]float64{}
		for _, op := range ops {
			samples[op] = &[7][]float64{}
		}
		for round := -1; round < cfg.CostRounds; round++ { // round −1 compiles and warms up
			for _, op := range ops {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				o, err := nets.Operator(op)
				if err != nil {
					return nil, err
				}
				g := adjoint.Guide{Schedule: s, Model: model, Operator: o, Loss: loss}
				var tr *adjoint.Trajectory
				var grad *mat.Dense
				fwd := timeIt(func() error { _, err := model.Eval(at, x, score.WantEps); return err })
				inner := timeIt(func() (err error) { tr, err = g.Predict(x, at.T, cfg.InnerSteps); return })
				if inner.err != nil {
					return nil, inner.err
				}
				ls := timeIt(func() (err error) { _, grad, err = loss(tr.Endpoint()); return })
				adj := timeIt(func() error { _, err := adjoint.Backprop(tr, o, grad); return err })
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				step := timeIt(func() error { _, err := g.Gradient(x, at.T, cfg.InnerSteps); return err })
				runtime.ReadMemStats(&ms)
				for _, e := range []error{fwd.err, ls.err, adj.err, step.err} {
					if e != nil {
						return nil, fmt.Errorf("cost of %s at batch %d: %w", op, b, e)
					}
				}
				if round < 0 {
					continue
				}
				for i, v := range []float64{fwd.s, inner.s, ls.s, adj.s, step.s, float64(ms.TotalAlloc - before)} {
					samples[op][i] = append(samples[op][i], v)
				}
			}
		}
		for _, op := range ops {
			m := func(i int) float64 { return median(samples[op][i]) }
			r := CostRow{Batch: b, Operator: op, Forward: m(0), Inner: m(1), Loss: m(2), Adjoint: m(3), Step: m(4),
				AllocMB: m(5) / (1 << 20), CacheMB: float64((2*cfg.InnerSteps+1)*b*Dim*8) / (1 << 20)}
			r.PerProduct = r.Adjoint / float64(cfg.InnerSteps)
			r.Marginal = r.PerProduct / r.Forward
			out = append(out, r)
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
