package access

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// FromModel wraps a models context (score network, and if withTrace the
// DF-TM network and, where ctx holds one, the centred DF-TM network ν_θ) as
// a Net for unconditional queries. Use models.EMAContext(ctx)
// to evaluate the EMA weights. The variables are moved to host memory, so
// the backend may differ from the one that trained them.
func FromModel(backend backends.Backend, ctx *context.Context, s schedule.Schedule, withTrace bool) (*Net, error) {
	dt, err := models.DTypeOf(ctx)
	if err != nil {
		return nil, err
	}
	for v := range ctx.IterVariables() {
		if !v.HasValue() {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return nil, err
		}
		if err := val.ToLocal(); err != nil {
			return nil, fmt.Errorf("access: variable %s: %w", v.ScopeAndName(), err)
		}
	}
	n := &Net{Backend: backend, Ctx: ctx, Schedule: s, DType: dt,
		Eps: func(ctx *context.Context, x, alpha, sigma *graph.Node) *graph.Node {
			return models.Eps(ctx, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(ctx, x)})
		}}
	if withTrace {
		n.T = func(ctx *context.Context, x, alpha, sigma *graph.Node) *graph.Node {
			return models.TraceNet(ctx, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(ctx, x)})
		}
		if models.HasNetwork(ctx, models.CentredTraceScope) {
			n.Nu = func(ctx *context.Context, x, alpha, sigma *graph.Node) *graph.Node {
				return models.CentredTraceNet(ctx, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(ctx, x)})
			}
		}
	}
	return n, nil
}

// nullClass is the unconditional label K for every row of x (nil when the
// network has no classes).
func nullClass(ctx *context.Context, x *graph.Node) *graph.Node {
	k := context.GetParamOr(ctx, models.ParamNumClasses, 0)
	if k == 0 {
		return nil
	}
	return graph.AddScalar(graph.Zeros(x.Graph(), shapesInt32(x.Shape().Dimensions[0])), float64(k))
}

func shapesInt32(n int) shapes.Shape { return shapes.Make(dtypes.Int32, n) }
