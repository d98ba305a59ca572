package models

import (
	"fmt"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"
)

// Values of ParamArch.
const (
	ArchMLP   = "mlp"   // ResidualMLP: additive time and class embedding, no normalisation
	ArchFiLM  = "film"  // FiLMMLP: pre-LayerNorm blocks, multiplicative (FiLM) conditioning
	ArchPatch = "patch" // PatchNet: FiLMMLP's blocks shared over the image's patches
)

// validArch reports whether ParamArch names a trunk.
func validArch(a string) bool {
	return a == ArchMLP || a == ArchFiLM || a == ArchPatch || a == ArchONNX
}

// trunk builds the network of ParamArch under scope.
func trunk(scope *model.Scope, in Inputs, outDim int, extra *graph.Node, zeroOut bool) *graph.Node {
	switch a := model.GetParamOr(scope, ParamArch, ArchMLP); a {
	case ArchMLP:
		if extra != nil || zeroOut {
			return residualMLP(scope, in, outDim, extra, zeroOut)
		}
		return ResidualMLP(scope, in, outDim)
	case ArchFiLM:
		return FiLMMLP(scope, in, outDim, extra, zeroOut)
	case ArchPatch:
		return PatchNet(scope, in, outDim, extra, zeroOut)
	case ArchONNX:
		if extra != nil || zeroOut {
			panic("models: an imported ONNX network takes no mixture skip")
		}
		return onnxTrunk(scope, in, outDim)
	default:
		panic(fmt.Sprintf("models: arch %q, want %s, %s or %s", a, ArchMLP, ArchFiLM, ArchPatch))
	}
}

// FiLMMLP is a residual MLP with pre-LayerNorm blocks and multiplicative
// time/class conditioning (FiLM; Perez et al. 2018, as in the ADM/U-Net
// blocks of Dhariwal & Nichol 2021): with e = act(W_e FourierEmbed(λ)
// [+ class embedding]) of ParamEmbedWidth features (default: the width),
//
//	h₀ = W_in [c_in x, extra],
//	h_{k+1} = h_k + W₂ act(W₁ (LN(h_k) ⊙ (1 + γ_k(e)) + β_k(e))),
//	out = W_out act(LN(h_L)).
//
// extra (optional, [B, m]) are further input features (e.g. the mixture
// skip's x̂₀); with zeroOut the output layer starts at zero, so a network
// added to an analytic skip starts as the skip.
func FiLMMLP(scope *model.Scope, in Inputs, outDim int, extra *graph.Node, zeroOut bool) *graph.Node {
	width := model.GetParamOr(scope, ParamWidth, 128)
	depth := model.GetParamOr(scope, ParamDepth, 3)
	actName := model.GetParamOr(scope, ParamActivation, "silu")
	act := activation(actName)
	h := Dense(scope.In("input"), inputFeatures(in, extra), width)
	emb := act(conditioning(scope, in, model.GetParamOr(scope, ParamEmbedWidth, width)))
	for i := range depth {
		bctx := scope.In("block_%d", i)
		film := Dense(bctx.In("film"), emb, 2*width)
		gamma := graph.Slice(film, graph.AxisRange(), graph.AxisRange(0, width))
		beta := graph.Slice(film, graph.AxisRange(), graph.AxisRange(width, 2*width))
		u := graph.Add(graph.Mul(layerNorm(h), graph.AddScalar(gamma, 1)), beta)
		u = denseAct(bctx.In("dense1"), u, width, actName)
		h = graph.Add(h, Dense(bctx.In("dense2"), u, width))
	}
	return outputDense(scope.In("output"), act(layerNorm(h)), outDim, zeroOut)
}

// residualMLP is ResidualMLP with extra input features and an optionally
// zero-initialised output layer.
func residualMLP(scope *model.Scope, in Inputs, outDim int, extra *graph.Node, zeroOut bool) *graph.Node {
	width := model.GetParamOr(scope, ParamWidth, 128)
	depth := model.GetParamOr(scope, ParamDepth, 3)
	act := activation(model.GetParamOr(scope, ParamActivation, "silu"))
	h := Dense(scope.In("input"), inputFeatures(in, extra), width)
	emb := act(conditioning(scope, in, width))
	for i := range depth {
		bctx := scope.In("block_%d", i)
		u := graph.Add(Dense(bctx.In("dense1"), act(h), width), Dense(bctx.In("embed"), emb, width))
		h = graph.Add(h, Dense(bctx.In("dense2"), act(u), width))
	}
	return outputDense(scope.In("output"), act(h), outDim, zeroOut)
}

// inputFeatures is [c_in x, extra] with c_in = 1/√(α²+σ²).
func inputFeatures(in Inputs, extra *graph.Node) *graph.Node {
	alpha, sigma := graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1)
	cIn := graph.Div(graph.OnesLike(alpha), graph.Sqrt(graph.Add(graph.Square(alpha), graph.Square(sigma))))
	x := graph.Mul(in.X, cIn)
	if extra == nil {
		return x
	}
	return graph.Concatenate([]*graph.Node{x, extra}, -1)
}

// conditioning is W_e FourierEmbed(log σ/α) [+ the class's row of a learned
// table], [B, width], before the activation.
func conditioning(scope *model.Scope, in Inputs, width int) *graph.Node {
	alpha, sigma := graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1)
	emb := Dense(scope.In("embed"), FourierEmbed(scope, graph.Log(graph.Div(sigma, alpha))), width)
	if k := model.GetParamOr(scope, ParamNumClasses, 0); k > 0 && in.Class != nil {
		onehot := graph.OneHot(in.Class, k+1, in.X.DType())
		table := scope.In("class").VariableWithShape("table", shapes.Make(in.X.DType(), k+1, width))
		emb = graph.Add(emb, graph.MatMul(onehot, table.NodeValue(in.X.Graph())))
	}
	return emb
}

// layerNorm normalises the last axis to zero mean and unit variance (no
// affine parameters: FiLM supplies them).
func layerNorm(h *graph.Node) *graph.Node {
	if fusedForInference(h.Graph()) {
		return nn.LayerNorm(h, []int{-1}, 1e-5, nil, nil, nil)
	}
	mean := graph.ReduceAndKeep(h, graph.ReduceMean, -1)
	c := graph.Sub(h, mean)
	v := graph.ReduceAndKeep(graph.Square(c), graph.ReduceMean, -1)
	return graph.Div(c, graph.Sqrt(graph.AddScalar(v, 1e-5))) // Rsqrt has no gradient in GoMLX v0.28
}

// fusedForInference reports whether g may use the backend's fused ops
// (nn.LayerNorm, nn.Dense with an activation): one pass over the
// activations where their decompositions take several (on the Go backend's
// scalar element-wise loops, most of the patch network's forward beside its
// products). Their gradient is the decomposition's, built beside the fused
// op; a training graph, which takes it for every step, keeps the
// decomposition alone.
func fusedForInference(g *graph.Graph) bool {
	store := model.GetStore(g)
	return store == nil || !store.IsTraining(g)
}

// outputDense is Dense, or with zero a Dense whose weights and biases start
// at zero (the variables' existing values win when they exist).
func outputDense(scope *model.Scope, x *graph.Node, out int, zero bool) *graph.Node {
	w, b, outIn := outputParams(scope, x, out, zero)
	return graph.Add(applyWeights(x, w, outIn), b)
}

// outputParams are outputDense's weights and biases, and whether the
// weights are [out, in] (always, with zero).
func outputParams(scope *model.Scope, x *graph.Node, out int, zero bool) (w, b *graph.Node, outIn bool) {
	if !zero {
		return denseParams(scope, x, out)
	}
	g := x.Graph()
	dtype, in := x.DType(), x.Shape().Dimensions[1]
	zeros := func(g *graph.Graph, shape shapes.Shape) *graph.Node { return graph.Zeros(g, shape) }
	zs := scope.WithInitializer(zeros)
	b = zs.VariableWithShape("biases", shapes.Make(dtype, 1, out)).NodeValue(g)
	w = zs.VariableWithShape("weights_t", shapes.Make(dtype, out, in)).NodeValue(g)
	return w, b, true
}
