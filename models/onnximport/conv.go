package onnximport

import (
	"fmt"
	"math"

	"github.com/gomlx/compute-onnx/support/protos"
)

// rewriteConv replaces every 2-D Conv node (group 1, explicit or no
// padding, any strides and dilations, a weight initializer) by a sum of
// matrix products over the kernel's taps, in channels-last layout:
//
//	Xₚ = Pad(Transpose(X, [0, 2, 3, 1]))                                     [N, Hₚ, Wₚ, C]
//	X_ij = Slice(Xₚ, [i·dₕ, j·d_w], [−(kₕ−1−i)·dₕ, −(k_w−1−j)·d_w], steps [sₕ, s_w])   [N, Hₒ, Wₒ, C]
//	Y = Reshape(Σ_ij Einsum("noc,nlc->nol", W[:, :, i, j], X_ij) + b, [N, O, Hₒ, Wₒ])
//
// onnx-gomlx converts Conv to GoMLX's ConvGeneral, which the Go backend
// runs as a scalar loop, and its VJP as another; the products run on the
// backend's matrix kernels. The layout is chosen for the VJP: GoMLX's VJP
// of a product towards an operand [N, L, C] is a product whose output is
// [N, L, C] already, where a channels-first operand [N, C, L] would be
// transposed back (one pass over k² times the input). One product per tap,
// rather than one over an im2col matrix of all taps, saves concatenating
// the taps (copies of C values at a time in channels-last) and slicing the
// gradient apart again. Each slice's end counts from the end of the padded
// axis (to the end for the last tap), so no spatial size is needed: a slice
// has ⌊(Hₚ − (kₕ−1)dₕ − 1)/sₕ⌋ + 1 = Hₒ rows, as Conv's output. Conv
// nodes of other kinds (1-D or 3-D, grouped, auto_pad, a weight computed by
// the graph) are left to onnx-gomlx, as are all of them before opset 13.
// It returns the number of nodes replaced.
func rewriteConv(m *protos.ModelProto) int {
	opset := opsetOf(m)
	if opset < 13 {
		return 0
	}
	inits := map[string]*protos.TensorProto{}
	for _, t := range m.Graph.Initializer {
		inits[t.Name] = t
	}
	var nodes []*protos.NodeProto
	n := 0
	for _, node := range m.Graph.Node {
		c, ok := tapConvOf(node, inits)
		if !ok {
			nodes = append(nodes, node)
			continue
		}
		b := &nodeBuilder{prefix: fmt.Sprintf("dfx_conv%d_", n), opset: opset}
		nodes = append(nodes, c.nodes(b, node)...)
		n++
	}
	m.Graph.Node = nodes
	return n
}

// tapConv is a 2-D Conv node's geometry: kernel size, strides,
// dilations and pads (top, left, bottom, right).
type tapConv struct {
	kernel, strides, dilations [2]int64
	pads                       [4]int64
}

// tapConvOf reads a Conv node that rewriteConv replaces; ok is false for
// any other node.
func tapConvOf(node *protos.NodeProto, inits map[string]*protos.TensorProto) (c tapConv, ok bool) {
	if node.OpType != "Conv" || (node.Domain != "" && node.Domain != "ai.onnx") || len(node.Input) < 2 || len(node.Input) > 3 || len(node.Output) != 1 {
		return c, false
	}
	w, found := inits[node.Input[1]]
	if !found || len(w.Dims) != 4 {
		return c, false
	}
	c.kernel = [2]int64{w.Dims[2], w.Dims[3]}
	c.strides, c.dilations = [2]int64{1, 1}, [2]int64{1, 1}
	for _, a := range node.Attribute {
		switch {
		case a.Name == "auto_pad" && a.Type == protos.AttributeProto_STRING:
			if s := string(a.S); s != "NOTSET" && s != "" {
				return c, false
			}
		case a.Name == "group" && a.Type == protos.AttributeProto_INT:
			if a.I != 1 {
				return c, false
			}
		case a.Name == "kernel_shape" && a.Type == protos.AttributeProto_INTS:
			if len(a.Ints) != 2 || a.Ints[0] != c.kernel[0] || a.Ints[1] != c.kernel[1] {
				return c, false
			}
		case a.Name == "strides" && a.Type == protos.AttributeProto_INTS && len(a.Ints) == 2:
			copy(c.strides[:], a.Ints)
		case a.Name == "dilations" && a.Type == protos.AttributeProto_INTS && len(a.Ints) == 2:
			copy(c.dilations[:], a.Ints)
		case a.Name == "pads" && a.Type == protos.AttributeProto_INTS && len(a.Ints) == 4:
			copy(c.pads[:], a.Ints)
		default:
			return c, false
		}
	}
	for _, v := range [...]int64{c.kernel[0], c.kernel[1], c.strides[0], c.strides[1], c.dilations[0], c.dilations[1]} {
		if v < 1 {
			return c, false
		}
	}
	for _, p := range c.pads {
		if p < 0 {
			return c, false
		}
	}
	return c, true
}

// nodes are the ONNX nodes that compute node (a Conv of geometry c) as a
// sum of products over its taps, the last one writing node's output.
func (c tapConv) nodes(b *nodeBuilder, node *protos.NodeProto) []*protos.NodeProto {
	x, w := node.Input[0], node.Input[1]
	ones := b.ints("ones", 1, 1)
	batch := b.op("Slice", b.op("Shape", x), b.ints("first", 0), b.ints("second", 1))
	x = b.transpose(x, 0, 2, 3, 1) // [N, H, W, C]
	if c.pads != [4]int64{} {
		x = b.op("Pad", x, b.ints("pads", 0, c.pads[0], c.pads[1], 0, 0, c.pads[2], c.pads[3], 0))
	}
	channels := b.op("Slice", b.op("Shape", x), b.ints("last", 3), b.ints("end", 4))
	var sum, spatial string
	for i := range c.kernel[0] {
		for j := range c.kernel[1] {
			tap := x // [N, Hₒ, Wₒ, C]
			if c.kernel != [2]int64{1, 1} || c.strides != [2]int64{1, 1} {
				start := []int64{i * c.dilations[0], j * c.dilations[1]}
				end := []int64{tapEnd(i, c.kernel[0], c.dilations[0]), tapEnd(j, c.kernel[1], c.dilations[1])}
				tap = b.op("Slice", x, b.ints("start", start...), b.ints("end", end...), b.ints("axes", 1, 2), b.ints("steps", c.strides[:]...))
			}
			if spatial == "" {
				spatial = b.op("Slice", b.op("Shape", tap), b.ints("from", 1), b.ints("to", 3))
			}
			rows := b.op("Reshape", tap, b.concat(0, batch, b.ints("pixels", -1), channels)) // [N, HₒWₒ, C]
			kernel := b.op("Squeeze", b.op("Slice", w, b.ints("at", i, j), b.ints("to", i+1, j+1), b.ints("axes", 2, 3)), b.ints("axes", 2, 3))
			product := b.op("Einsum", b.op("Expand", kernel, b.concat(0, batch, ones)), rows) // [N, O, HₒWₒ]
			b.last().Attribute = []*protos.AttributeProto{{Name: "equation", Type: protos.AttributeProto_STRING, S: []byte("noc,nlc->nol")}}
			if sum == "" {
				sum = product
			} else {
				sum = b.op("Add", sum, product)
			}
		}
	}
	if len(node.Input) == 3 && node.Input[2] != "" {
		sum = b.op("Add", sum, b.unsqueeze(node.Input[2]))
	}
	b.named("Reshape", node.Output[0], sum, b.concat(0, b.ints("batch", 0, -1), spatial))
	return b.nodes
}

// transpose adds a Transpose node of x by perm.
func (b *nodeBuilder) transpose(x string, perm ...int64) string {
	out := b.op("Transpose", x)
	b.last().Attribute = []*protos.AttributeProto{{Name: "perm", Type: protos.AttributeProto_INTS, Ints: perm}}
	return out
}

// tapEnd is the exclusive end, counted from the end of the padded axis, of
// kernel tap i of k (dilation d): −(k−1−i)·d, or past the end for the last.
func tapEnd(i, k, d int64) int64 {
	if i == k-1 {
		return math.MaxInt64
	}
	return -(k - 1 - i) * d
}

// concat adds a Concat node of inputs along axis.
func (b *nodeBuilder) concat(axis int64, inputs ...string) string {
	out := b.op("Concat", inputs...)
	b.last().Attribute = []*protos.AttributeProto{{Name: "axis", Type: protos.AttributeProto_INT, I: axis}}
	return out
}
