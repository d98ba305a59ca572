package access

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// ControlVariate estimates the trace of a network written as a known model
// plus a residual, ε̂ = ε_known + r (e.g. a mixture skip plus the network's
// residual): tr F = tr F_known + tr (1/σ) ∂r/∂x, the first exactly
// (Known, e.g. score.Exact of the skip mixture) and the second by an
// estimator of the residual alone (Residual, e.g. Hutchinson on a Net
// whose Eps is r). When the residual is small, so is the variance of the
// estimate: the known part is the control variate of Hutchinson's probes.
type ControlVariate struct {
	Known, Residual score.TraceEstimator
	// Label is the name of a registered estimator built this way (e.g.
	// "skip-hutchinson-4"); "" names it by its parts, "known+residual".
	Label string
}

// Name implements score.TraceEstimator.
func (cv ControlVariate) Name() string {
	if cv.Label != "" {
		return cv.Label
	}
	return fmt.Sprintf("%s+%s", cv.Known.Name(), cv.Residual.Name())
}

// Trace implements score.TraceEstimator.
func (cv ControlVariate) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return cv.TraceContext(context.Background(), c, x)
}

// TraceContext implements score.ContextTraceEstimator: each part stops
// (inside, where it can) with ctx's error once ctx is done.
func (cv ControlVariate) TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	a, err := score.TraceContext(ctx, cv.Known, c, x)
	if err != nil {
		return nil, err
	}
	b, err := score.TraceContext(ctx, cv.Residual, c, x)
	if err != nil {
		return nil, err
	}
	if len(a) != len(b) {
		return nil, fmt.Errorf("access: control variate: %d known traces, %d residual traces", len(a), len(b))
	}
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out, nil
}
