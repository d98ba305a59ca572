package score

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// One evaluation of a network's exact trace can be d VJPs, seconds of
// work: the contracts below let such a model stop between its graph calls
// when a run is cancelled (e.g. by SIGINT in the command line), while
// Model and TraceEstimator stay the plain contracts every caller uses.

// ContextModel is a Model that can stop inside one evaluation, with ctx's
// error, once ctx is done.
type ContextModel interface {
	Model
	EvalContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error)
}

// ContextTraceEstimator is a TraceEstimator that can stop inside one
// trace, with ctx's error, once ctx is done.
type ContextTraceEstimator interface {
	TraceEstimator
	TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error)
}

// EvalContext evaluates m, through EvalContext where m is a ContextModel;
// it returns ctx's error without evaluating once ctx is done.
func EvalContext(ctx context.Context, m Model, c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cm, ok := m.(ContextModel); ok {
		return cm.EvalContext(ctx, c, x, want)
	}
	return m.Eval(c, x, want)
}

// TraceContext is est's trace, through TraceContext where est is a
// ContextTraceEstimator; it returns ctx's error without evaluating once
// ctx is done.
func TraceContext(ctx context.Context, est TraceEstimator, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ce, ok := est.(ContextTraceEstimator); ok {
		return ce.TraceContext(ctx, c, x)
	}
	return est.Trace(c, x)
}

// WithContext binds m to ctx: its Eval is EvalContext(ctx, m, …), so a
// solver that knows only Model (dfx/pfode's systems) stops at its next
// evaluation, or inside it, once ctx is done. A nil ctx returns m.
func WithContext(ctx context.Context, m Model) Model {
	if ctx == nil {
		return m
	}
	return boundModel{ctx, m}
}

type boundModel struct {
	ctx context.Context
	m   Model
}

func (b boundModel) Eval(c schedule.Coefficients, x *mat.Dense, want Want) (*Eval, error) {
	return EvalContext(b.ctx, b.m, c, x, want)
}
