package models

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	gomlxact "github.com/gomlx/gomlx/ml/layers/activation"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/nn"

	"github.com/dfx-lab/dfx/dfx/access"
)

// Inputs of a noise-conditional network for a batch of B queries.
type Inputs struct {
	X            *graph.Node // [B, d] noisy state x_t
	Alpha, Sigma *graph.Node // [B] schedule values α(t), σ(t) of each row
	Class        *graph.Node // [B] Int32 labels in [0, K], K the null class; nil when unconditional
}

// ResidualMLP is the trunk shared by the score network and the DF-TM
// network: with c_in = 1/√(α²+σ²) (data of unit scale), noise level
// λ = log(σ/α) and embedding e = FourierEmbed(λ) [+ class embedding],
//
//	h₀ = W_in·(c_in x),  h_{k+1} = h_k + W₂ act(W₁ act(h_k) + W_e act(e)),  out = W_out act(h_L).
//
// It returns [B, outDim]. Variables live under scope (entered with In, so
// building the trunk twice under one scope value panics; callers that reuse a
// network in one graph pass scope.At(name)).
func ResidualMLP(scope *model.Scope, in Inputs, outDim int) *graph.Node {
	width := model.GetParamOr(scope, ParamWidth, 128)
	depth := model.GetParamOr(scope, ParamDepth, 3)
	act := activation(model.GetParamOr(scope, ParamActivation, "silu"))
	x, alpha, sigma := in.X, graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1)
	cIn := graph.Div(graph.OnesLike(alpha), graph.Sqrt(graph.Add(graph.Square(alpha), graph.Square(sigma)))) // Rsqrt has no gradient in GoMLX v0.28
	h := Dense(scope.In("input"), graph.Mul(x, cIn), width)

	lambda := graph.Log(graph.Div(sigma, alpha)) // [B,1]
	emb := FourierEmbed(scope, lambda)
	emb = Dense(scope.In("embed"), emb, width)
	if k := model.GetParamOr(scope, ParamNumClasses, 0); k > 0 && in.Class != nil {
		onehot := graph.OneHot(in.Class, k+1, x.DType()) // [B, K+1], row K = null class
		table := scope.In("class").VariableWithShape("table", shapes.Make(x.DType(), k+1, width))
		emb = graph.Add(emb, graph.MatMul(onehot, table.NodeValue(x.Graph())))
	}
	emb = act(emb)
	for i := range depth {
		bctx := scope.In("block_%d", i)
		u := graph.Add(Dense(bctx.In("dense1"), act(h), width), Dense(bctx.In("embed"), emb, width))
		h = graph.Add(h, Dense(bctx.In("dense2"), act(u), width))
	}
	return Dense(scope.In("output"), act(h), outDim)
}

// Dense is x·W + b for x [B, in]. W is stored either as "weights" [in, out]
// (the layout of the networks trained before ParamWeightLayout existed) or
// as "weights_t" [out, in] (PyTorch's nn.Linear layout, y = x·Wᵀ): with it
// the weight gradient vᵀx comes out of the product in the variable's own
// layout, where [in, out] costs an explicit transpose of every weight
// gradient on the Go backend (≈ 5 ms per million weights, the largest
// remaining cost of a train step; figures/bench/PROFILE.md). A variable
// that already exists decides the layout (so any checkpoint loads as it was
// trained); a new network takes ParamWeightLayout. The two layouts have
// different names, so a weight is never read in the wrong one.
func Dense(scope *model.Scope, x *graph.Node, out int) *graph.Node {
	w, b, outIn := denseParams(scope, x, out)
	return graph.Add(applyWeights(x, w, outIn), b)
}

// applyWeights is x·W [B, out] for weights w stored [in, out], or [out, in]
// with outIn.
func applyWeights(x, w *graph.Node, outIn bool) *graph.Node {
	if !outIn {
		return graph.MatMul(x, w)
	}
	return graph.DotGeneral(x, []int{1}, nil, w, []int{1}, nil)
}

// applyWeightsT is g·Wᵀ [B, in], the product a gradient at Dense's output
// takes back to its input, for w as applyWeights takes it.
func applyWeightsT(g, w *graph.Node, outIn bool) *graph.Node {
	if outIn {
		return graph.MatMul(g, w)
	}
	return graph.DotGeneral(g, []int{1}, nil, w, []int{1}, nil)
}

// denseParams are Dense's weights and biases [1, out], and whether the
// weights are [out, in].
func denseParams(scope *model.Scope, x *graph.Node, out int) (w, b *graph.Node, outIn bool) {
	g := x.Graph()
	dtype, in := x.DType(), x.Shape().Dimensions[1]
	bs := scope
	if model.GetParamOr(scope, ParamZeroBias, false) {
		bs = scope.WithInitializer(func(g *graph.Graph, shape shapes.Shape) *graph.Node { return graph.Zeros(g, shape) })
	}
	b = bs.VariableWithShape("biases", shapes.Make(dtype, 1, out)).NodeValue(g)
	if !transposedWeights(scope) {
		return scope.VariableWithShape("weights", shapes.Make(dtype, in, out)).NodeValue(g), b, false
	}
	w = scope.WithInitializer(heFanIn(scope.Store(), in)).
		VariableWithShape("weights_t", shapes.Make(dtype, out, in)).NodeValue(g)
	return w, b, true
}

// denseAct is activation(name)(Dense(scope, x, out)); with SiLU in an
// inference graph (fusedForInference), the backend's fused dense: product,
// bias and activation in one op, the last two in one pass.
func denseAct(scope *model.Scope, x *graph.Node, out int, name string) *graph.Node {
	if (name != "silu" && name != "swish") || !fusedForInference(x.Graph()) {
		return activation(name)(Dense(scope, x, out))
	}
	w, b, outIn := denseParams(scope, x, out)
	layout := compute.DenseLayoutInputOutputs
	if outIn {
		layout = compute.DenseLayoutOutputsInput
	}
	return nn.Dense(x, w, graph.Reshape(b, out), layout, gomlxact.TypeSilu)
}

// transposedWeights reports whether Dense under scope stores W as [out, in].
// A scope holding both layouts is a programming error (e.g. a network copied
// over another of the other layout): which one is meant cannot be known.
func transposedWeights(scope *model.Scope) bool {
	legacy, modern := scope.GetVariable("weights") != nil, scope.GetVariable("weights_t") != nil
	switch {
	case legacy && modern:
		panic(fmt.Sprintf("models: scope %s holds both weights [in, out] and weights_t [out, in]", scope.Scope()))
	case legacy:
		return false
	case modern:
		return true
	}
	return model.GetParamOr(scope, ParamWeightLayout, LayoutInOut) == LayoutOutIn
}

// heFanIn is GoMLX's default (He) initialiser, N(0, 2/fan_in), with fan_in
// given: for a [out, in] weight the default would take out as the fan-in.
func heFanIn(store *model.Store, fanIn int) model.VariableInitializer {
	stddev := math.Sqrt(2 / float64(max(fanIn, 1)))
	return func(g *graph.Graph, shape shapes.Shape) *graph.Node {
		return graph.MulScalar(store.RandomNormal(g, shape), stddev)
	}
}

// FourierEmbed maps a noise level λ [B,1] to [λ, sin(f_k λ), cos(f_k λ)]_k with
// ParamEmbedDim/2 frequencies f_k geometric between 1 and ParamEmbedMaxFreq
// (λ itself keeps a smooth, monotone feature next to the periodic ones).
func FourierEmbed(scope *model.Scope, lambda *graph.Node) *graph.Node {
	dim := model.GetParamOr(scope, ParamEmbedDim, 32)
	maxFreq := model.GetParamOr(scope, ParamEmbedMaxFreq, 8.0)
	n := max(dim/2, 1)
	freqs := make([]float64, n)
	for k := range freqs {
		freqs[k] = math.Pow(maxFreq, float64(k)/float64(max(n-1, 1)))
	}
	f := graph.ConvertDType(graph.Const(lambda.Graph(), [][]float64{freqs}), lambda.DType()) // [1,n]
	arg := graph.Mul(lambda, f)                                                              // [B,n]
	return graph.Concatenate([]*graph.Node{lambda, graph.Sin(arg), graph.Cos(arg)}, -1)
}

// validActivation reports whether activation knows name.
func validActivation(name string) bool {
	switch name {
	case "tanh", "relu", "silu", "swish", "softplus":
		return true
	}
	return false
}

func activation(name string) func(*graph.Node) *graph.Node {
	switch name {
	case "tanh":
		return graph.Tanh
	case "relu":
		return func(x *graph.Node) *graph.Node { return graph.Max(x, graph.ZerosLike(x)) }
	case "silu", "swish":
		return func(x *graph.Node) *graph.Node { return graph.Mul(x, graph.Logistic(x)) }
	case "softplus":
		return func(x *graph.Node) *graph.Node { return graph.Log1p(graph.Exp(x)) }
	}
	panic(fmt.Sprintf("models: unknown activation %q (want silu, tanh, relu, softplus)", name))
}

// Scope names of the networks inside a store.
const (
	ScoreScope        = "score"
	TraceScope        = "dftm"
	CentredTraceScope = "nu" // centred DF-TM network ν_θ (ours)
)

// HasScope reports whether a variable's absolute scope (as
// model.Variable.Scope returns it) lies under the top-level scope name.
func HasScope(varScope, name string) bool {
	return varScope == "/"+name || strings.HasPrefix(varScope, "/"+name+"/")
}

// HasNetwork reports whether scope holds variables of the network under the
// top-level scope name (ScoreScope, TraceScope, CentredTraceScope).
func HasNetwork(store *model.Store, name string) bool {
	for v := range store.IterVariables() {
		if HasScope(v.Scope(), name) {
			return true
		}
	}
	return false
}

// ScoreOutput is the score network's raw output [B, d] in the context's
// parameterisation (ParamParam).
func ScoreOutput(scope *model.Scope, in Inputs) *graph.Node {
	return trunk(scope.At(ScoreScope), in, in.X.Shape().Dimensions[1], nil, false)
}

// Eps is ε̂_θ(x_t, t) [B, d], converted from the network's parameterisation.
// With a mixture skip (ParamSkip = SkipMixture, SetMixtureSkip) it is
// ε_mix(x, t | c) + the network's output in ε-space, the network seeing the
// skip's denoiser x̂₀ = (x − σ ε_mix)/α beside x and its output layer
// starting at zero: an untrained network is the mixture.
func Eps(scope *model.Scope, in Inputs) *graph.Node {
	net := scope.At(ScoreScope) // the score network's own parameters (e.g. /score/width) win over the root's
	p, err := ParseParameterisation(model.GetParamOr(net, ParamParam, "eps"))
	if err != nil {
		panic(err)
	}
	alpha, sigma := graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1)
	if model.GetParamOr(net, ParamSkip, SkipNone) == SkipMixture {
		if p != PredictEps {
			panic(fmt.Sprintf("models: a mixture skip needs parameterisation eps, have %s", p))
		}
		skip, residual := skipAndResidual(scope, in)
		return graph.Add(skip, residual)
	}
	out := ScoreOutput(scope, in)
	return EpsFromGraph(p, out, in.X, alpha, sigma)
}

// skipAndResidual are the two terms of an ε-network with a mixture skip:
// ε_mix(x, t | c) and the network's output, which sees the skip's denoiser
// x̂₀ = (x − σ ε_mix)/α beside x.
func skipAndResidual(scope *model.Scope, in Inputs) (skip, residual *graph.Node) {
	skip = MixtureEps(scope, in)
	y0 := access.DenoiserFromEpsGraph(in.X, skip, in.Alpha, in.Sigma)
	return skip, trunk(scope.At(ScoreScope), in, in.X.Shape().Dimensions[1], y0, true)
}

// Denoiser is ȳ_θ = (x − σ ε̂_θ)/α [B, d] (paper Proposition optimal_y).
func Denoiser(scope *model.Scope, in Inputs) *graph.Node {
	return access.DenoiserFromEpsGraph(in.X, Eps(scope, in), in.Alpha, in.Sigma)
}

// TraceNet is the DF-TM network t_θ(x_t, t) [B] (paper Algorithm tnet), trained
// to regress ‖x₀‖²/d; its optimum is Σᵢ wᵢ‖yᵢ‖²/d (Proposition optimal_t).
//
// With ParamTraceSkip (and the store's mixture skip) it is the skip
// mixture's exact E_mix[‖x₀‖² | x_t]/d (MixtureSecondMoment) plus a
// residual MLP whose output layer starts at zero.
func TraceNet(scope *model.Scope, in Inputs) *graph.Node {
	net := scope.At(TraceScope)
	b := in.X.Shape().Dimensions[0]
	if !model.GetParamOr(net, ParamTraceSkip, false) {
		return graph.Reshape(ResidualMLP(net, in, 1), b)
	}
	d := float64(in.X.Shape().Dimensions[1])
	skip := graph.DivScalar(MixtureSecondMoment(scope, in), d)
	return graph.Add(skip, graph.Reshape(trunk(net, in, 1, nil, true), b))
}

// CentredTraceNet is the centred DF-TM network ν_θ(x_t, t) [B] (ours, beyond
// the paper), trained to regress ‖ε̂_θ − ε‖²/d (objective DFTMCentred); with
// the exact denoiser its optimum is (α²/σ²) tr Cov[x₀|x_t]/d and
// tr F = (d/σ²)(1 − ν).
//
// With ParamTraceSkip it is the skip mixture's own optimum
// (α²/σ²)(E_mix‖x₀‖² − ‖ȳ_mix‖²)/d, which makes tr F exact for the
// mixture, plus a residual MLP whose output layer starts at zero.
func CentredTraceNet(scope *model.Scope, in Inputs) *graph.Node {
	net := scope.At(CentredTraceScope)
	b := in.X.Shape().Dimensions[0]
	if !model.GetParamOr(net, ParamTraceSkip, false) {
		return graph.Reshape(ResidualMLP(net, in, 1), b)
	}
	d := float64(in.X.Shape().Dimensions[1])
	second, y := mixtureMoments(scope, in)
	trCov := graph.Sub(second, graph.ReduceSum(graph.Square(y), -1))
	skip := graph.Mul(graph.Div(graph.Square(in.Alpha), graph.Square(in.Sigma)), graph.DivScalar(trCov, d))
	return graph.Add(skip, graph.Reshape(trunk(net, in, 1, nil, true), b))
}

// GuidedEps is classifier-free guidance (Ho & Salimans 2022) in the
// repository's one scale convention (access.GuidedEpsGraph), per row,
//
//	ε̃ = ε_θ(x, ∅) + s (ε_θ(x, c) − ε_θ(x, ∅))   [B, d],
//
// for the scales s [B] and ∅ the null class K (ParamNumClasses): s = 1 is
// the conditional prediction, s = 0 the unconditional one. Both
// predictions come from one pass over 2B rows.
func GuidedEps(scope *model.Scope, in Inputs, scale *graph.Node) *graph.Node {
	k := model.GetParamOr(scope, ParamNumClasses, 0)
	null := graph.AddScalar(graph.ZerosLike(in.Class), float64(k))
	rows := in.X.Shape().Dimensions[0]
	twice := func(a, b *graph.Node) *graph.Node { return graph.Concatenate([]*graph.Node{a, b}, 0) }
	e := Eps(scope, Inputs{X: twice(in.X, in.X), Alpha: twice(in.Alpha, in.Alpha), Sigma: twice(in.Sigma, in.Sigma), Class: twice(in.Class, null)})
	cond := graph.Slice(e, graph.AxisRange(0, rows))
	uncond := graph.Slice(e, graph.AxisRange(rows, 2*rows))
	return access.GuidedEpsGraph(cond, uncond, scale)
}
