package models

import (
	"fmt"
	"math"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
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
// It returns [B, outDim]. Variables live under ctx's current scope.
func ResidualMLP(ctx *context.Context, in Inputs, outDim int) *graph.Node {
	width := context.GetParamOr(ctx, ParamWidth, 128)
	depth := context.GetParamOr(ctx, ParamDepth, 3)
	act := activation(context.GetParamOr(ctx, ParamActivation, "silu"))
	x, alpha, sigma := in.X, graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1)
	cIn := graph.Rsqrt(graph.Add(graph.Square(alpha), graph.Square(sigma)))
	h := Dense(ctx.In("input"), graph.Mul(x, cIn), width)

	lambda := graph.Log(graph.Div(sigma, alpha)) // [B,1]
	emb := FourierEmbed(ctx, lambda)
	emb = Dense(ctx.In("embed"), emb, width)
	if k := context.GetParamOr(ctx, ParamNumClasses, 0); k > 0 && in.Class != nil {
		onehot := graph.OneHot(in.Class, k+1, x.DType()) // [B, K+1], row K = null class
		table := ctx.In("class").VariableWithShape("table", shapes.Make(x.DType(), k+1, width))
		emb = graph.Add(emb, graph.Dot(onehot, table.ValueGraph(x.Graph())))
	}
	emb = act(emb)
	for i := range depth {
		bctx := ctx.Inf("block_%d", i)
		u := graph.Add(Dense(bctx.In("dense1"), act(h), width), Dense(bctx.In("embed"), emb, width))
		h = graph.Add(h, Dense(bctx.In("dense2"), act(u), width))
	}
	return Dense(ctx.In("output"), act(h), outDim)
}

// Dense is x·W + b for x [B, in], W [in, out], built on graph.Dot so that
// its gradient takes fastgrad's matrix-product path.
func Dense(ctx *context.Context, x *graph.Node, out int) *graph.Node {
	g := x.Graph()
	in := x.Shape().Dimensions[1]
	w := ctx.VariableWithShape("weights", shapes.Make(x.DType(), in, out)).ValueGraph(g)
	b := ctx.VariableWithShape("biases", shapes.Make(x.DType(), 1, out)).ValueGraph(g)
	return graph.Add(graph.Dot(x, w), b)
}

// FourierEmbed maps a noise level λ [B,1] to [λ, sin(f_k λ), cos(f_k λ)]_k with
// ParamEmbedDim/2 frequencies f_k geometric between 1 and ParamEmbedMaxFreq
// (λ itself keeps a smooth, monotone feature next to the periodic ones).
func FourierEmbed(ctx *context.Context, lambda *graph.Node) *graph.Node {
	dim := context.GetParamOr(ctx, ParamEmbedDim, 32)
	maxFreq := context.GetParamOr(ctx, ParamEmbedMaxFreq, 8.0)
	n := max(dim/2, 1)
	freqs := make([]float64, n)
	for k := range freqs {
		freqs[k] = math.Pow(maxFreq, float64(k)/float64(max(n-1, 1)))
	}
	f := graph.ConvertDType(graph.Const(lambda.Graph(), [][]float64{freqs}), lambda.DType()) // [1,n]
	arg := graph.Mul(lambda, f)                                                              // [B,n]
	return graph.Concatenate([]*graph.Node{lambda, graph.Sin(arg), graph.Cos(arg)}, -1)
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

// Scope names of the networks inside a context.
const (
	ScoreScope        = "score"
	TraceScope        = "dftm"
	CentredTraceScope = "nu" // centred DF-TM network ν_θ (ours)
)

// HasScope reports whether a variable's absolute scope (as
// context.Variable.Scope returns it) lies under the top-level scope name.
func HasScope(varScope, name string) bool {
	return varScope == "/"+name || strings.HasPrefix(varScope, "/"+name+"/")
}

// HasNetwork reports whether ctx holds variables of the network under the
// top-level scope name (ScoreScope, TraceScope, CentredTraceScope).
func HasNetwork(ctx *context.Context, name string) bool {
	for v := range ctx.IterVariables() {
		if HasScope(v.Scope(), name) {
			return true
		}
	}
	return false
}

// ScoreOutput is the score network's raw output [B, d] in the context's
// parameterisation (ParamParam).
func ScoreOutput(ctx *context.Context, in Inputs) *graph.Node {
	return ResidualMLP(ctx.In(ScoreScope), in, in.X.Shape().Dimensions[1])
}

// Eps is ε̂_θ(x_t, t) [B, d], converted from the network's parameterisation.
func Eps(ctx *context.Context, in Inputs) *graph.Node {
	p, err := ParseParameterisation(context.GetParamOr(ctx, ParamParam, "eps"))
	if err != nil {
		panic(err)
	}
	out := ScoreOutput(ctx, in)
	return EpsFromGraph(p, out, in.X, graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1))
}

// Denoiser is ȳ_θ = (x − σ ε̂_θ)/α [B, d] (paper Proposition optimal_y).
func Denoiser(ctx *context.Context, in Inputs) *graph.Node {
	return YFromEpsGraph(Eps(ctx, in), in.X, graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1))
}

// TraceNet is the DF-TM network t_θ(x_t, t) [B] (paper Algorithm tnet), trained
// to regress ‖x₀‖²/d; its optimum is Σᵢ wᵢ‖yᵢ‖²/d (Proposition optimal_t).
func TraceNet(ctx *context.Context, in Inputs) *graph.Node {
	return graph.Reshape(ResidualMLP(ctx.In(TraceScope), in, 1), in.X.Shape().Dimensions[0])
}

// CentredTraceNet is the centred DF-TM network ν_θ(x_t, t) [B] (ours, beyond
// the paper), trained to regress ‖ε̂_θ − ε‖²/d (objective DFTMCentred); with
// the exact denoiser its optimum is (α²/σ²) tr Cov[x₀|x_t]/d and
// tr F = (d/σ²)(1 − ν).
func CentredTraceNet(ctx *context.Context, in Inputs) *graph.Node {
	return graph.Reshape(ResidualMLP(ctx.In(CentredTraceScope), in, 1), in.X.Shape().Dimensions[0])
}

// GuidedEps is classifier-free guidance (Ho & Salimans 2022):
// ε̃ = (1 + w) ε_θ(x, c) − w ε_θ(x, ∅), with ∅ the null class K. w = 0 is
// the conditional prediction.
func GuidedEps(ctx *context.Context, in Inputs, w float64) *graph.Node {
	cond := Eps(ctx, in)
	if w == 0 {
		return cond
	}
	k := context.GetParamOr(ctx, ParamNumClasses, 0)
	null := in
	null.Class = graph.AddScalar(graph.ZerosLike(in.Class), float64(k))
	return graph.Sub(graph.MulScalar(cond, 1+w), graph.MulScalar(Eps(ctx, null), w))
}
