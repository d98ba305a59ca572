package models

import (
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// patchQuadsGraph is residualQuadsGraph for a patch-network trunk with the
// SiLU (handWrittenQuads), its backward passes written out instead of
// taken by graph.Gradient. The result is the same function; what changes
// is the number of passes over the activations, each a scalar loop on the
// Go backend (the reductions and broadcasts slower still; measured in
// figures/bench/NOTES.md, "The patch network's backward passes written
// out"):
//
//   - all rows share one time and the null class, so each block's FiLM
//     scale and shift are folded into its first dense layer's weights
//     (diag(1 + γ)W₁ and b₁ + βW₁, [W, W] work once a call) instead of two
//     broadcast passes over the activations forward and one backward;
//   - the LayerNorms' statistics, the SiLU's derivative and the normalised
//     activations are formed once in the forward pass and shared by the
//     g probes' backward passes, which are the closed forms
//     ∂LN: ḡ ↦ (ḡ − mean ḡ − x̂·mean(ḡ ⊙ x̂))/s and ∂SiLU(z) = ς + z ς(1 − ς);
//   - a row mean is a product with a column of 1/W (the SIMD matrix
//     kernel) rather than the generic reduction;
//   - the probes never go back through the patches' windows: with the
//     first layer's gradient ḡ₀ [R·n, W] and the windows z of (c_in v, u)
//     (the same cut as the features), the quadratic form is Σ ḡ₀ ⊙ (z W_in)
//     over a point's patch rows (the windows cut from the probe's images,
//     not from the patch rows).
//
// Inputs and outputs as residualQuadsGraph's; the trunk must be PatchNet
// with the mixture skip's denoiser as its extra input and a zero-started
// output layer (ε-networks with a mixture skip).
func patchQuadsGraph(scope *model.Scope, in []*graph.Node) []*graph.Node {
	x, y, v, u, alpha, sigma := in[0], in[1], in[2], in[3], in[4], in[5]
	rows, d := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	g := v.Shape().Dimensions[0] / rows
	sc := scope.At(ScoreScope)
	geo := patchGeometryOf(sc, d)
	width := model.GetParamOr(sc, ParamWidth, 128)
	depth := model.GetParamOr(sc, ParamDepth, 3)
	n := geo.grid * geo.grid
	patchRowsN := rows * n

	// The time's conditioning, once: one row at (α, σ) and the null class.
	first := graph.Slice(x, graph.AxisRange(0, 1))
	emb := silu(conditioning(sc, Inputs{X: first, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, first)},
		model.GetParamOr(sc, ParamEmbedWidth, width)))
	cIn := graph.Reshape(graph.Div(graph.OnesLike(alpha), graph.Sqrt(graph.Add(graph.Square(alpha), graph.Square(sigma)))))

	// Forward pass, keeping what the backward passes share.
	feats := graph.Concatenate([]*graph.Node{windows(graph.Mul(x, cIn), geo.side, geo.p, geo.halo), windows(y, geo.side, geo.p, geo.halo)}, -1)
	wIn, bIn, inOutIn := denseParams(sc.In("input"), feats, width)
	h := graph.Add(applyWeights(feats, wIn, inOutIn), bIn)
	h = graph.Reshape(graph.Add(graph.Reshape(h, rows, n, width), positionTable(sc, h, n, width)), patchRowsN, width)
	type block struct {
		norm       normalised
		dAct       *graph.Node // SiLU′ at the first dense layer's output
		w1, w2     *graph.Node // w1 with the FiLM scale folded in
		out1, out2 bool        // weights stored [out, in]
	}
	blocks := make([]block, depth)
	for i := range depth {
		bctx := sc.In("block_%d", i)
		film := Dense(bctx.In("film"), emb, 2*width) // [1, 2W]
		scale := graph.AddScalar(graph.Slice(film, graph.AxisRange(), graph.AxisRange(0, width)), 1)
		shift := graph.Slice(film, graph.AxisRange(), graph.AxisRange(width, 2*width))
		w1, b1, out1 := denseParams(bctx.In("dense1"), h, width)
		b1 = graph.Add(b1, applyWeights(shift, w1, out1))
		if out1 { // w1 [out, in]: scale its columns
			w1 = graph.Mul(w1, scale)
		} else {
			w1 = graph.Mul(w1, graph.Transpose(scale, 0, 1))
		}
		norm := layerNormParts(h)
		pre := graph.Add(applyWeights(norm.xhat, w1, out1), b1)
		act, dAct := siluAndDerivative(pre)
		w2, b2, out2 := denseParams(bctx.In("dense2"), act, width)
		h = graph.Add(h, graph.Add(applyWeights(act, w2, out2), b2))
		blocks[i] = block{norm: norm, dAct: dAct, w1: w1, w2: w2, out1: out1, out2: out2}
	}
	last := layerNormParts(h)
	act, dAct := siluAndDerivative(last.xhat)
	wOut, bOut, outOutIn := outputParams(sc.In("output"), act, geo.p*geo.p, true)
	r := unpatch(graph.Add(applyWeights(act, wOut, outOutIn), bOut), geo)

	// Backward passes, one a probe.
	probeMajor := func(a *graph.Node) *graph.Node { // [rows·g, d], row-major → probe-major
		return graph.Reshape(graph.TransposeAllDims(graph.Reshape(a, rows, g, d), 1, 0, 2), g*rows, d)
	}
	vp, up := probeMajor(v), probeMajor(u)
	quads := make([]*graph.Node, g)
	for j := range g {
		probe := func(a *graph.Node) *graph.Node { return graph.Slice(a, graph.AxisRange(j*rows, (j+1)*rows)) }
		vj, uj := probe(vp), probe(up) // [rows, d]: slicing the images, not the patch rows, is the cheap cut
		z := graph.Concatenate([]*graph.Node{windows(graph.Mul(vj, cIn), geo.side, geo.p, geo.halo), windows(uj, geo.side, geo.p, geo.halo)}, -1)
		gh := last.backward(graph.Mul(applyWeightsT(patchOf(vj, geo), wOut, outOutIn), dAct))
		for i := depth - 1; i >= 0; i-- {
			b := blocks[i]
			gPre := graph.Mul(applyWeightsT(gh, b.w2, b.out2), b.dAct)
			gh = graph.Add(gh, b.norm.backward(applyWeightsT(gPre, b.w1, b.out1)))
		}
		q := rowsTimes(graph.Mul(gh, applyWeights(z, wIn, inOutIn)), 1)                // [R·n, 1]
		quads[j] = graph.ReduceAndKeep(graph.Reshape(q, rows, n), graph.ReduceSum, -1) // [rows, 1]
	}
	q := quads[0]
	if g > 1 {
		q = graph.Concatenate(quads, 1)
	}
	return []*graph.Node{r, graph.Reshape(graph.Div(q, graph.Reshape(sigma)), rows*g)}
}

// handWrittenQuads reports whether the store's ε-network has a trunk
// patchQuadsGraph writes out: PatchNet with the SiLU.
func handWrittenQuads(scope *model.Scope) bool {
	sc := scope.At(ScoreScope)
	act := model.GetParamOr(sc, ParamActivation, "silu")
	return model.GetParamOr(sc, ParamArch, ArchMLP) == ArchPatch && (act == "silu" || act == "swish")
}

// normalised is a LayerNorm's output x̂ [R, W] and its rows' 1/s [R, 1],
// s = √(var + 1e-5) (layerNorm's).
type normalised struct{ xhat, invStd *graph.Node }

// layerNormParts is layerNorm(h) with the statistics its gradient needs.
func layerNormParts(h *graph.Node) normalised {
	c := graph.Sub(h, rowMean(h))
	inv := graph.Inverse(graph.Sqrt(graph.AddScalar(rowMean(graph.Square(c)), 1e-5)))
	return normalised{xhat: graph.Mul(c, inv), invStd: inv}
}

// backward takes a gradient at x̂ back to h: (ḡ − mean ḡ − x̂·mean(ḡ ⊙ x̂))/s.
func (n normalised) backward(gx *graph.Node) *graph.Node {
	return graph.Mul(graph.Sub(graph.Sub(gx, rowMean(gx)), graph.Mul(n.xhat, rowMean(graph.Mul(gx, n.xhat)))), n.invStd)
}

// rowMean is the mean of a [R, W] node's rows [R, 1].
func rowMean(a *graph.Node) *graph.Node { return rowsTimes(a, 1/float64(a.Shape().Dimensions[1])) }

// rowsTimes is c times the sum of a [R, W] node's rows [R, 1], as a
// product with a column of c's (the SIMD matrix kernel, several times
// faster than the Go backend's generic reduction).
func rowsTimes(a *graph.Node, c float64) *graph.Node {
	col := graph.BroadcastToDims(graph.Scalar(a.Graph(), a.DType(), c), a.Shape().Dimensions[1], 1)
	return graph.DotGeneral(a, []int{1}, nil, col, []int{0}, nil)
}

// siluAndDerivative is z ς(z) and its derivative ς + z ς(1 − ς).
func siluAndDerivative(z *graph.Node) (act, deriv *graph.Node) {
	s := graph.Logistic(z)
	act = graph.Mul(z, s)
	return act, graph.Add(s, graph.Mul(act, graph.OneMinus(s)))
}

// silu is z ς(z).
func silu(z *graph.Node) *graph.Node { return graph.Mul(z, graph.Logistic(z)) }

// patchOf cuts images [B, side²] into their patches' pixels [B·n, P²], in
// patch order: unpatch's inverse.
func patchOf(x *graph.Node, geo patchGeometry) *graph.Node {
	bsz := x.Shape().Dimensions[0]
	x = graph.TransposeAllDims(graph.Reshape(x, bsz, geo.grid, geo.p, geo.grid, geo.p), 0, 1, 3, 2, 4)
	return graph.Reshape(x, bsz*geo.grid*geo.grid, geo.p*geo.p)
}
