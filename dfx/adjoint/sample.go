package adjoint

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Config is a guided sampling run.
type Config struct {
	// Steps is the number of outer DDIM steps, uniform in t from the
	// schedule's T down to t_min; step k goes from t_k to t_{k+1}.
	Steps int
	// From and To bound the guidance window [From, To) of 0-based outer
	// step indices, 0 ≤ From ≤ To ≤ Steps; From == To is unguided DDIM.
	From, To int
	// InnerSteps is the number of DDIM steps of the inner solve that
	// predicts x̂₀ from each guided state (≥ 1 when the window is not empty).
	InnerSteps int
	// Strength scales the update x ← x − Strength·σ(t_k)·ĝ; 0 takes the
	// guided path but leaves every state unchanged.
	Strength float64
	// Normalize replaces each row of g by g·√d/‖g‖ (rows with g = 0 stay
	// 0). The update's size is then Strength·σ(t)·√d, Strength times the
	// typical norm ‖σ ε‖ of the noise at t, whatever the loss's scale and
	// whatever the size of ∂x̂₀/∂x_t at t: Strength reads as a fraction of
	// the noise. Without it the raw gradient is used.
	Normalize bool
	// Observe, if not nil, is called at each guided step with the state x
	// [B, d] before the update and its gradient, before Sample uses them
	// (it must not change them): studies compare other operators' λ at the
	// same states. Its error stops the run.
	Observe func(step int, at schedule.Coefficients, x *mat.Dense, g *GradientResult) error
}

// validate checks the configuration.
func (c Config) validate() error {
	if c.Steps < 1 {
		return fmt.Errorf("adjoint: need at least 1 outer step, got %d: %w", c.Steps, ErrInput)
	}
	if c.From < 0 || c.From > c.To || c.To > c.Steps {
		return fmt.Errorf("adjoint: guidance window [%d, %d) outside [0, %d]: %w", c.From, c.To, c.Steps, ErrInput)
	}
	if c.From < c.To && c.InnerSteps < 1 {
		return fmt.Errorf("adjoint: inner solve needs at least 1 step, got %d: %w", c.InnerSteps, ErrInput)
	}
	if math.IsNaN(c.Strength) || math.IsInf(c.Strength, 0) {
		return fmt.Errorf("adjoint: strength %v is not finite: %w", c.Strength, ErrInput)
	}
	return nil
}

// guided reports whether outer step k is in the window.
func (c Config) guided(k int) bool { return k >= c.From && k < c.To }

// StepStats is what one outer step did.
type StepStats struct {
	Step   int     // 0-based outer step index
	T, T1  float64 // the step goes from T to T1
	Guided bool
	// Loss is the mean loss of the inner prediction L(x̂₀(x_t)) before the
	// update, and GradNorm the mean ‖λ_t‖ before normalisation; both NaN on
	// unguided steps.
	Loss, GradNorm float64
	ModelEvals     int // inner steps plus the outer step
	OperatorCalls  int
	Elapsed        time.Duration
}

// Result is a guided sampling run.
type Result struct {
	X             *mat.Dense    // samples at t_min [B, d]
	Steps         []StepStats   // one per outer step
	ModelEvals    int           // ε̂ evaluations in all: Steps + (To − From)·InnerSteps
	OperatorCalls int           // Fisher products in all: (To − From)·InnerSteps
	Elapsed       time.Duration // wall time of the run
}

// Sample runs DDIM (η = 0) from xT [B, d] at the schedule's T (draw it with
// schedule.SamplePrior) down to t_min in cfg.Steps steps, uniform in t. At
// each outer step k in [From, To) it computes λ = Gradient(x, t_k,
// InnerSteps), normalises it if asked (see Config.Normalize) and moves
// x ← x − Strength·σ(t_k)·ĝ before the step, descending g.Loss. It stops
// with ctx's error when ctx is done.
func (g Guide) Sample(ctx context.Context, xT *mat.Dense, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := g.checkData(); err != nil {
		return nil, err
	}
	if _, _, err := checkFinite("initial state", xT); err != nil {
		return nil, err
	}
	if cfg.From < cfg.To && (g.Operator == nil || g.Loss == nil) {
		return nil, fmt.Errorf("adjoint: guidance window [%d, %d) needs an Operator and a Loss: %w", cfg.From, cfg.To, ErrInput)
	}
	lo, hi := g.Schedule.Interval()
	grid, err := schedule.TimeGrid(g.Schedule, schedule.GridUniform, lo, hi, cfg.Steps)
	if err != nil {
		return nil, fmt.Errorf("adjoint: %w: %w", err, ErrInput)
	}
	start := time.Now()
	res := &Result{}
	x := mat.DenseCopyOf(xT)
	for k := range cfg.Steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stepStart := time.Now()
		c0, err := schedule.At(g.Schedule, grid[k])
		if err != nil {
			return nil, fmt.Errorf("adjoint: %w: %w", err, ErrInput)
		}
		c1, err := schedule.At(g.Schedule, grid[k+1])
		if err != nil {
			return nil, fmt.Errorf("adjoint: %w: %w", err, ErrInput)
		}
		st := StepStats{Step: k, T: c0.T, T1: c1.T, Loss: math.NaN(), GradNorm: math.NaN()}
		if cfg.guided(k) {
			if err := g.guide(k, c0, x, cfg, &st); err != nil {
				return nil, err
			}
		}
		next, _, err := g.step(c0, c1, x)
		if err != nil {
			return nil, fmt.Errorf("adjoint: outer step %d: %w", k, err)
		}
		x = next
		st.ModelEvals++
		st.Elapsed = time.Since(stepStart)
		res.ModelEvals += st.ModelEvals
		res.OperatorCalls += st.OperatorCalls
		res.Steps = append(res.Steps, st)
	}
	res.X = x
	res.Elapsed = time.Since(start)
	return res, nil
}

// guide is outer step k's guidance: λ = Gradient(x, t_k, InnerSteps),
// shown to cfg.Observe, normalised if asked, and the move
// x ← x − Strength·σ(t_k)·ĝ in place; it records the step's loss, mean
// gradient norm and costs in st.
func (g Guide) guide(k int, c0 schedule.Coefficients, x *mat.Dense, cfg Config, st *StepStats) error {
	b, d := x.Dims()
	gr, err := g.Gradient(x, c0.T, cfg.InnerSteps)
	if err != nil {
		return fmt.Errorf("adjoint: outer step %d (t = %g): %w", k, c0.T, err)
	}
	if cfg.Observe != nil {
		if err := cfg.Observe(k, c0, x, gr); err != nil {
			return fmt.Errorf("adjoint: outer step %d (t = %g): observer: %w", k, c0.T, err)
		}
	}
	st.Guided = true
	st.Loss = floats.Sum(gr.Loss) / float64(b)
	st.GradNorm = 0
	st.ModelEvals += gr.ModelEvals
	st.OperatorCalls += gr.OperatorCalls
	scale := math.Sqrt(float64(d))
	for i := range b {
		gi, xi := gr.Grad.RawRowView(i)[:d], x.RawRowView(i)[:d]
		n := floats.Norm(gi, 2)
		st.GradNorm += n / float64(b)
		f := cfg.Strength * c0.Sigma
		if cfg.Normalize {
			if n == 0 || math.IsInf(n, 0) {
				f = 0 // nothing to follow (or an overflowing norm: refuse to guess)
			} else {
				f *= scale / n
			}
		}
		floats.AddScaled(xi, -f, gi)
	}
	return nil
}
