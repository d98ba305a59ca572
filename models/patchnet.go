package models

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// PatchNet is FiLMMLP applied to every patch of a square image with shared
// weights (a convolution with stride and kernel of whole patches, run as
// matrix products): the image is cut into P×P patches (ParamPatch), each
// patch's features are the pixels of the (2H+1)×(2H+1) patches around it
// (ParamPatchHalo H, zero beyond the border) of c_in x and of extra (e.g.
// the mixture skip's x̂₀), and a learned embedding of its position; the
// blocks are FiLMMLP's (pre-LayerNorm, FiLM time/class conditioning), and
// each patch's output is its own P² pixels. Every parameter sees every
// patch of every image of a batch: locality and weight sharing, the
// inductive bias of a convolutional network, at the cost of
// [B·n, F] × [F, width] products. outDim must be a square side² with P
// dividing side.
func PatchNet(scope *model.Scope, in Inputs, outDim int, extra *graph.Node, zeroOut bool) *graph.Node {
	g := patchGeometryOf(scope, outDim)
	return patchHead(scope, in, g, patchRows(in, extra, g), zeroOut)
}

// patchGeometry is a patch network's cut of a square image: side², the
// patch P, the halo H and the grid of side/P patches a side.
type patchGeometry struct{ side, p, halo, grid int }

// patchGeometryOf reads the cut from scope's parameters; it panics where
// the image cannot be cut so.
func patchGeometryOf(scope *model.Scope, outDim int) patchGeometry {
	p := model.GetParamOr(scope, ParamPatch, 4)
	halo := model.GetParamOr(scope, ParamPatchHalo, 1)
	side := int(math.Round(math.Sqrt(float64(outDim))))
	if side*side != outDim || p < 1 || side%p != 0 || halo < 0 {
		panic(fmt.Sprintf("models: patch network on d = %d: need a square image whose side is a multiple of the patch %d (halo %d ≥ 0)", outDim, p, halo))
	}
	return patchGeometry{side: side, p: p, halo: halo, grid: side / p}
}

// patchRows are the features of every patch [B·n, F]: the windows of c_in x,
// then those of extra.
func patchRows(in Inputs, extra *graph.Node, g patchGeometry) *graph.Node {
	feats := []*graph.Node{windows(inputFeatures(in, nil), g.side, g.p, g.halo)}
	if extra != nil {
		feats = append(feats, windows(extra, g.side, g.p, g.halo))
	}
	return graph.Concatenate(feats, -1)
}

// patchHead is the network on the patches' features rows [B·n, F] (B the
// rows of in): the blocks, each patch's own output and the image put back
// together [B, side²]. Every patch's output depends on its own row of rows
// only (and on t and the class).
func patchHead(scope *model.Scope, in Inputs, g patchGeometry, rows *graph.Node, zeroOut bool) *graph.Node {
	return unpatch(patchOutputs(scope, in, g, rows, zeroOut), g)
}

// patchOutputs is patchHead before the image is put back together: each
// patch's pixels [B·n, P²].
func patchOutputs(scope *model.Scope, in Inputs, g patchGeometry, rows *graph.Node, zeroOut bool) *graph.Node {
	width := model.GetParamOr(scope, ParamWidth, 128)
	depth := model.GetParamOr(scope, ParamDepth, 3)
	actName := model.GetParamOr(scope, ParamActivation, "silu")
	act := activation(actName)
	bsz := in.X.Shape().Dimensions[0]
	n := g.grid * g.grid
	h := Dense(scope.In("input"), rows, width)
	h = graph.Add(graph.Reshape(h, bsz, n, width), positionTable(scope, h, n, width)) // [B, n, W]
	emb := act(conditioning(scope, in, model.GetParamOr(scope, ParamEmbedWidth, width)))
	flat := func(x *graph.Node) *graph.Node { return graph.Reshape(x, bsz*n, width) }
	for i := range depth {
		bctx := scope.In("block_%d", i)
		film := graph.InsertAxes(Dense(bctx.In("film"), emb, 2*width), 1) // [B, 1, 2W]
		gamma := graph.Slice(film, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, width))
		beta := graph.Slice(film, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(width, 2*width))
		u := graph.Add(graph.Mul(layerNorm(h), graph.AddScalar(gamma, 1)), beta)
		u = denseAct(bctx.In("dense1"), flat(u), width, actName)
		h = graph.Add(h, graph.Reshape(Dense(bctx.In("dense2"), u, width), bsz, n, width))
	}
	return outputDense(scope.In("output"), act(flat(layerNorm(h))), g.p*g.p, zeroOut) // [B·n, P²]
}

// positionTable is the learned embedding of the patches' positions
// [1, n, width] (zero at the start), in like's dtype and graph.
func positionTable(scope *model.Scope, like *graph.Node, n, width int) *graph.Node {
	return scope.In("position").WithInitializer(func(g *graph.Graph, s shapes.Shape) *graph.Node { return graph.Zeros(g, s) }).
		VariableWithShape("table", shapes.Make(like.DType(), 1, n, width)).NodeValue(like.Graph())
}

// unpatch puts the patches' pixels out [B·n, P²] back into images [B, side²].
func unpatch(out *graph.Node, g patchGeometry) *graph.Node {
	bsz := out.Shape().Dimensions[0] / (g.grid * g.grid)
	out = graph.TransposeAllDims(graph.Reshape(out, bsz, g.grid, g.grid, g.p, g.p), 0, 1, 3, 2, 4)
	return graph.Reshape(out, bsz, g.side*g.side)
}

// windows cuts images x [B, side²] into P×P patches and returns, for each
// patch, the pixels of the (2H+1)² patches around it (zero outside the
// image), as rows [B·n, (2H+1)²P²] in patch order.
func windows(x *graph.Node, side, p, halo int) *graph.Node {
	bsz := x.Shape().Dimensions[0]
	grid := side / p
	img := graph.Reshape(x, bsz, side, side)
	if halo > 0 { // zero border of H patches (Concatenate: differentiable in x)
		zr := graph.Zeros(x.Graph(), shapes.Make(x.DType(), bsz, halo*p, side))
		img = graph.Concatenate([]*graph.Node{zr, img, zr}, 1)
		zc := graph.Zeros(x.Graph(), shapes.Make(x.DType(), bsz, side+2*halo*p, halo*p))
		img = graph.Concatenate([]*graph.Node{zc, img, zc}, 2)
	}
	g2 := grid + 2*halo
	blocks := graph.TransposeAllDims(graph.Reshape(img, bsz, g2, p, g2, p), 0, 1, 3, 2, 4) // [B, g2, g2, P, P]
	var parts []*graph.Node
	for di := 0; di <= 2*halo; di++ {
		for dj := 0; dj <= 2*halo; dj++ {
			s := graph.Slice(blocks, graph.AxisRange(), graph.AxisRange(di, di+grid), graph.AxisRange(dj, dj+grid))
			parts = append(parts, graph.Reshape(s, bsz, grid, grid, p*p))
		}
	}
	return graph.Reshape(graph.Concatenate(parts, -1), bsz*grid*grid, len(parts)*p*p)
}
