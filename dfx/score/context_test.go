package score_test

import (
	"context"
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// ctxModel records which of its two evaluations was called.
type ctxModel struct{ plain, withCtx *int }

func (m ctxModel) Eval(schedule.Coefficients, *mat.Dense, score.Want) (*score.Eval, error) {
	*m.plain++
	return &score.Eval{Eps: mat.NewDense(1, 1, nil)}, nil
}

func (m ctxModel) EvalContext(ctx context.Context, _ schedule.Coefficients, _ *mat.Dense, _ score.Want) (*score.Eval, error) {
	*m.withCtx++
	return &score.Eval{Eps: mat.NewDense(1, 1, nil)}, ctx.Err()
}

func TestAModelBoundToAContextEvaluatesThroughItAndNotOnceCancelled(t *testing.T) {
	var plain, withCtx int
	c := schedule.Coefficients{T: 0.5, Alpha: 0.8, Sigma: 0.6}
	x := mat.NewDense(1, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	bound := score.WithContext(ctx, ctxModel{&plain, &withCtx})
	if _, err := bound.Eval(c, x, score.WantEps); err != nil || withCtx != 1 || plain != 0 {
		t.Fatalf("error %v, %d context and %d plain evaluations; want one through EvalContext", err, withCtx, plain)
	}
	cancel()
	if _, err := bound.Eval(c, x, score.WantEps); !errors.Is(err, context.Canceled) || withCtx != 1 || plain != 0 {
		t.Errorf("cancelled: error %v after %d/%d evaluations, want context.Canceled and none", err, withCtx, plain)
	}
	// a plain Model is evaluated as it is, until the context is done
	f := score.ModelFunc(func(schedule.Coefficients, *mat.Dense, score.Want) (*score.Eval, error) {
		plain++
		return &score.Eval{Eps: mat.NewDense(1, 1, nil)}, nil
	})
	if _, err := score.EvalContext(context.Background(), f, c, x, score.WantEps); err != nil || plain != 1 {
		t.Errorf("plain model: error %v after %d evaluations", err, plain)
	}
	if _, err := score.EvalContext(ctx, f, c, x, score.WantEps); !errors.Is(err, context.Canceled) || plain != 1 {
		t.Errorf("plain model, cancelled: error %v after %d evaluations", err, plain)
	}
}
