package models

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/model/initializer"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// EMAScope holds the exponential moving averages of the trainable variables,
// under the same relative scope and names.
const EMAScope = "/ema"

// AdamScope is where GoMLX's Adam, and the host optimiser after it, keeps
// each variable's moments (AdamScope + the variable's path + "_1st_moment",
// "_2nd_moment") and its step counter.
const AdamScope = "/AdamOptimizer"

// withGradients is the part of GoMLX's Adam that applies given gradients.
type withGradients interface {
	UpdateGraphWithGradients(scope *model.Scope, grads []*graph.Node, lossDType dtypes.DType)
}

// adamOf is Adam, or AdamW when ParamWeightDecay > 0. Its learning rate is
// the variable the model function sets each step (lrVar).
func adamOf(store *model.Store) optimizer.Interface {
	return optimizer.Adam().WeightDecay(model.GetRootParamOr(store, ParamWeightDecay, 0.0)).Done()
}

// lrVar is the optimiser's learning-rate variable; the model function sets
// its graph value to the host-scheduled rate (LearningRate).
func lrVar(scope *model.Scope, dtype dtypes.DType) *model.Variable {
	return optimizer.LearningRateVar(scope.Store().RootScope(), dtype, 0)
}

// clippedAdamEMA is the optimiser of every dfx network, as a GoMLX
// optimizer.Interface: the gradients are clipped to global norm clipNorm (0:
// none), Adam/AdamW takes the step, then the EMA of every trainable variable
// is updated (emaDecay 0: none).
type clippedAdamEMA struct {
	adam     optimizer.Interface
	clipNorm float64
	emaDecay float64
}

// UpdateGraph implements optimizer.Interface.
func (o *clippedAdamEMA) UpdateGraph(scope *model.Scope, g *graph.Graph, loss *graph.Node) {
	grads := scope.BuildTrainableVariablesGradientsGraph(loss)
	if o.clipNorm > 0 && len(grads) > 0 {
		// Sum the squares in path order, not in the store's creation order
		// (which differs after a checkpoint load), so that a resumed run
		// rounds exactly as the original did.
		var paths []string
		for v := range scope.IterVariables() {
			if v.Trainable && v.InUseByGraph(g) {
				paths = append(paths, v.Path())
			}
		}
		order := make([]int, len(grads))
		for i := range order {
			order[i] = i
		}
		if len(paths) == len(grads) {
			sort.Slice(order, func(a, b int) bool { return paths[order[a]] < paths[order[b]] })
		}
		var sq *graph.Node
		for _, i := range order {
			s := graph.ReduceAllSum(graph.Square(grads[i]))
			if sq == nil {
				sq = s
			} else {
				sq = graph.Add(sq, s)
			}
		}
		norm := graph.Sqrt(sq)
		scale := graph.Min(graph.OnesLike(norm), graph.Div(graph.Scalar(g, norm.DType(), o.clipNorm), graph.AddScalar(norm, 1e-12)))
		for i := range grads {
			grads[i] = graph.Mul(grads[i], graph.ConvertDType(scale, grads[i].DType()))
		}
	}
	wg, ok := o.adam.(withGradients)
	if !ok {
		panic(fmt.Sprintf("models: optimiser %T cannot apply given gradients", o.adam))
	}
	wg.UpdateGraphWithGradients(scope, grads, loss.DType())
	o.emaGraph(scope.Store(), g)
}

// Clear implements optimizer.Interface.
func (o *clippedAdamEMA) Clear(scope *model.Scope) error { return o.adam.Clear(scope) }

// emaGraph updates ema ← d·ema + (1−d)·w after the optimiser step; at the
// first step ema = w.
func (o *clippedAdamEMA) emaGraph(store *model.Store, g *graph.Graph) {
	if o.emaDecay <= 0 {
		return
	}
	step := optimizer.GetGlobalStepVar(store).NodeValue(g)
	first := graph.Equal(step, graph.OnesLike(step))
	var trainable []*model.Variable
	for v := range store.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			trainable = append(trainable, v)
		}
	}
	for _, v := range trainable {
		w := v.NodeValue(g)
		ev := store.Scope(EMAScope+v.Scope()).WithInitializer(initializer.Zero).
			VariableWithShape(v.Name(), v.Shape()).SetTrainable(false)
		old := ev.NodeValue(g)
		upd := graph.Add(graph.MulScalar(old, o.emaDecay), graph.MulScalar(w, 1-o.emaDecay))
		ev.SetNodeValue(graph.Where(graph.BroadcastToShape(first, shapes.Make(dtypes.Bool, w.Shape().Dimensions...)), w, upd))
	}
}

// EMAStore returns a copy of store whose trainable variables hold their EMA
// values, for evaluation; store itself is unchanged. Without EMA variables it
// returns a plain copy.
func EMAStore(store *model.Store) (*model.Store, error) {
	c, err := store.Clone()
	if err != nil {
		return nil, err
	}
	for v := range c.IterVariables() {
		if !v.Trainable || HasScope(v.Scope(), EMAScope[1:]) {
			continue
		}
		ev := c.GetVariable(EMAScope + v.Path())
		if ev == nil || !ev.HasValue() {
			continue
		}
		clone, err := localCopy(ev)
		if err != nil {
			return nil, err
		}
		if err := v.SetValue(clone); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// localCopy is a host copy of a variable's value.
func localCopy(v *model.Variable) (*tensors.Tensor, error) {
	val, err := v.Value()
	if err != nil {
		return nil, err
	}
	return val.LocalClone()
}

// CopyTrainable copies the trainable variables of each source store into
// dst under the same paths (host copies), e.g. to put networks trained in
// separate stores side by side. A network travels with what it computes:
// its mixture skip (the non-trainable MixtureScope variables, and the
// root skip parameters) and the hyperparameters scoped to its own network
// (e.g. /score/width, /score/arch).
func CopyTrainable(dst *model.Store, srcs ...*model.Store) error {
	return copyNetworks(dst, false, srcs...)
}

// CopyMixtureSkip copies src's mixture skip alone (its variables, not
// trainable, and its parameters) into dst: what t_θ with the trace skip
// needs of its ε-network.
func CopyMixtureSkip(dst, src *model.Store) error {
	if !HasNetwork(src, MixtureScope) {
		return errors.New("models: the ε-network holds no mixture skip to copy")
	}
	return copyNetworks(dst, true, src)
}

func copyNetworks(dst *model.Store, mixtureOnly bool, srcs ...*model.Store) error {
	for _, src := range srcs {
		scopes := map[string]bool{}
		for v := range src.IterVariables() {
			skip := HasScope(v.Scope(), MixtureScope) // a network's mixture skip goes with it
			if !v.Trainable && !skip || mixtureOnly && !skip {
				continue
			}
			if top := strings.SplitN(strings.TrimPrefix(v.Scope(), "/"), "/", 2)[0]; top != "" {
				scopes[top] = true
			}
			clone, err := localCopy(v)
			if err != nil {
				return err
			}
			nv, err := dst.CreateVariable(v.Path(), clone)
			if err != nil {
				return err
			}
			nv.SetTrainable(!skip)
		}
		for p, val := range src.IterParams() {
			switch top := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2); {
			case p == "/"+ParamSkip || p == "/"+ParamMixtureComponents || p == "/"+ParamMixtureRank:
				dst.SetParam(p, val)
			case len(top) == 2 && scopes[top[0]]: // scoped to a copied network
				dst.SetParam(p, val)
			case mixtureOnly && len(top) == 2 && top[0] == ScoreScope: // the skip's network's settings, which it is checked against
				dst.SetParam(p, val)
			}
		}
	}
	return nil
}
