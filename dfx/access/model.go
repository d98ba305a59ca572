package access

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// FromModel wraps a models store (score network, and if withTrace the
// DF-TM network and, where the store holds one, the centred DF-TM network ν_θ) as
// a Net for unconditional queries. Use models.EMAStore(store)
// to evaluate the EMA weights. The variables are moved to host memory, so
// the backend may differ from the one that trained them.
func FromModel(backend compute.Backend, ctx *model.Store, s schedule.Schedule, withTrace bool) (*Net, error) {
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
			return nil, fmt.Errorf("access: variable %s: %w", v.Path(), err)
		}
	}
	n := &Net{Backend: backend, Store: ctx, Schedule: s, DType: dt,
		Eps: func(ctx *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return models.Eps(ctx, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(ctx, x)})
		}}
	if withTrace {
		n.T = func(ctx *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return models.TraceNet(ctx, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(ctx, x)})
		}
		if models.HasNetwork(ctx, models.CentredTraceScope) {
			n.Nu = func(ctx *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
				return models.CentredTraceNet(ctx, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(ctx, x)})
			}
		}
	}
	return n, nil
}

// nullClass is the unconditional label K for every row of x (nil when the
// network has no classes).
func nullClass(ctx *model.Scope, x *graph.Node) *graph.Node {
	k := model.GetParamOr(ctx, models.ParamNumClasses, 0)
	if k == 0 {
		return nil
	}
	return graph.AddScalar(graph.Zeros(x.Graph(), shapesInt32(x.Shape().Dimensions[0])), float64(k))
}

func shapesInt32(n int) shapes.Shape { return shapes.Make(dtypes.Int32, n) }
