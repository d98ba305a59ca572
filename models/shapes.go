package models

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// NetworkShapes returns path → shape of every variable that the named
// networks (ScoreScope, TraceScope, CentredTraceScope) create under the
// hyperparameters of params for data dimension d, found by building their
// graphs once on a fresh store (nothing is executed).
func NetworkShapes(params *model.Store, d int, networks ...string) (map[string]shapes.Shape, error) {
	if d < 1 {
		return nil, fmt.Errorf("models: data dimension %d", d)
	}
	dt, err := DTypeOf(params)
	if err != nil {
		return nil, err
	}
	if err := checkParams(params); err != nil {
		return nil, err
	}
	out := map[string]shapes.Shape{}
	if i := slices.Index(networks, ScoreScope); i >= 0 && model.GetParamOr(params.RootScope().At(ScoreScope), ParamArch, ArchMLP) == ArchONNX {
		if err := onnxShapes(params, d, out); err != nil {
			return nil, err
		}
		networks = slices.Delete(slices.Clone(networks), i, i+1)
	}
	fresh := model.NewStore()
	for p, v := range params.IterParams() {
		fresh.SetParam(p, v)
	}
	backend, err := NewBackend()
	if err != nil {
		return nil, err
	}
	k := model.GetRootParamOr(fresh, ParamNumClasses, 0)
	err = exceptions.TryCatch[error](func() {
		g := graph.NewGraph(backend, "shapes")
		model.SetStore(g, fresh)
		const b = 2
		in := Inputs{
			X:     graph.Parameter(g, "x", shapes.Make(dt, b, d)),
			Alpha: graph.Parameter(g, "alpha", shapes.Make(dt, b)),
			Sigma: graph.Parameter(g, "sigma", shapes.Make(dt, b)),
		}
		if k > 0 {
			in.Class = graph.Parameter(g, "class", shapes.Make(dtypes.Int32, b))
		}
		scope := fresh.RootScope()
		for _, n := range networks {
			switch n {
			case ScoreScope:
				Eps(scope, in) // the network and its mixture skip, if any
			case MixtureScope: // a fitted mixture on its own (checkpoint.Mixture)
				MixtureEps(scope, in)
			case TraceScope:
				TraceNet(scope, in)
			case CentredTraceScope:
				CentredTraceNet(scope, in)
			case ClassifierScope:
				ClassifierNet(scope, in.X)
			default:
				panic(fmt.Errorf("models: unknown network %q", n))
			}
		}
		g.Finalize()
	})
	if err != nil {
		return nil, fmt.Errorf("models: building the networks' graph: %w", err)
	}
	// A trace network with the trace skip reads the ε-network's mixture: the
	// mixture belongs to the ε-network (whose digest covers it, and which the
	// trace network's provenance names), so the trace network's own
	// variables, and its checkpoint, leave it out.
	ownsMixture := slices.Contains(networks, ScoreScope) || slices.Contains(networks, MixtureScope)
	for v := range fresh.IterVariables() {
		if !ownsMixture && HasScope(v.Scope(), MixtureScope) {
			continue
		}
		out[v.Path()] = v.Shape()
	}
	return out, nil
}

// onnxShapes adds the variables of an imported score network (ArchONNX) to
// out: its graph's initializers, read from the spec without building it
// (the conversion needs their values).
func onnxShapes(params *model.Store, d int, out map[string]shapes.Shape) error {
	spec, err := ONNXSpecOf(params.RootScope().At(ScoreScope))
	if err != nil {
		return err
	}
	if spec.Dim() != d {
		return fmt.Errorf("models: the ONNX network takes points of %d values (layout %v), the data have %d", spec.Dim(), spec.Layout, d)
	}
	vars, err := ONNXVariableShapes(spec)
	if err != nil {
		return err
	}
	maps.Copy(out, vars)
	return nil
}
