package onnximport

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gomlx/compute-onnx/support/protos"
)

// opsetOf is the version of the default ONNX operator set the model uses.
func opsetOf(m *protos.ModelProto) int64 {
	for _, o := range m.OpsetImport {
		if o.Domain == "" || o.Domain == "ai.onnx" {
			return o.Version
		}
	}
	return 0
}

// rewriteInstanceNorm replaces every InstanceNormalization node of m by the
// primitive ops onnx-gomlx converts: PyTorch exports nn.GroupNorm as
// Reshape → InstanceNormalization → Reshape (→ Mul, Add), and onnx-gomlx has
// no converter for it (nor a hook to register one). For X [N, C, …], scale
// and bias [C] and the node's epsilon:
//
//	X3 = Reshape(X, [0, 0, −1]);  μ = mean(X3, axis 2);  D = X3 − μ;
//	Y = Reshape(D / √(mean(D², axis 2) + ε) · scale[:, None] + bias[:, None], Shape(X)).
//
// The new nodes are named after the one they replace (prefix "dfx_in<k>_"),
// ONNX-valid for the model's opset (axes as attributes before opset 13/18,
// as inputs after). It returns the number of nodes replaced.
func rewriteInstanceNorm(m *protos.ModelProto) (int, error) {
	opset := opsetOf(m)
	var nodes []*protos.NodeProto
	n := 0
	for _, node := range m.Graph.Node {
		if node.OpType != "InstanceNormalization" || (node.Domain != "" && node.Domain != "ai.onnx") {
			nodes = append(nodes, node)
			continue
		}
		if len(node.Input) != 3 || len(node.Output) != 1 {
			return 0, fmt.Errorf("InstanceNormalization node %q has %d inputs and %d outputs, want 3 and 1", node.Name, len(node.Input), len(node.Output))
		}
		eps := float32(1e-5)
		for _, a := range node.Attribute {
			if a.Name == "epsilon" {
				eps = a.F
			}
		}
		if !(eps >= 0) || math.IsInf(float64(eps), 0) {
			return 0, fmt.Errorf("InstanceNormalization node %q has epsilon %g", node.Name, eps)
		}
		b := &nodeBuilder{prefix: fmt.Sprintf("dfx_in%d_", n), opset: opset}
		x, scale, bias := node.Input[0], node.Input[1], node.Input[2]
		shape := b.op("Shape", x)
		x3 := b.op("Reshape", x, b.ints("flat", 0, 0, -1))
		mean := b.reduceMean(x3)
		dev := b.op("Sub", x3, mean)
		variance := b.reduceMean(b.op("Mul", dev, dev))
		epsT := b.constant("eps", &protos.TensorProto{DataType: int32(protos.TensorProto_FLOAT), FloatData: []float32{eps}})
		norm := b.op("Div", dev, b.op("Sqrt", b.op("Add", variance, epsT)))
		y3 := b.op("Add", b.op("Mul", norm, b.unsqueeze(scale)), b.unsqueeze(bias))
		b.named("Reshape", node.Output[0], y3, shape)
		nodes = append(nodes, b.nodes...)
		n++
	}
	m.Graph.Node = nodes
	return n, nil
}

// nodeBuilder emits ONNX nodes with unique output names.
type nodeBuilder struct {
	prefix string
	opset  int64
	k      int
	nodes  []*protos.NodeProto
}

// op adds a node of type opType with one fresh output and returns its name.
func (b *nodeBuilder) op(opType string, inputs ...string) string {
	b.k++
	return b.named(opType, fmt.Sprintf("%s%d_%s", b.prefix, b.k, opType), inputs...)
}

func (b *nodeBuilder) named(opType, output string, inputs ...string) string {
	b.nodes = append(b.nodes, &protos.NodeProto{Name: output, OpType: opType, Input: inputs, Output: []string{output}})
	return output
}

func (b *nodeBuilder) last() *protos.NodeProto { return b.nodes[len(b.nodes)-1] }

// constant adds a Constant node holding t.
func (b *nodeBuilder) constant(name string, t *protos.TensorProto) string {
	out := b.op("Constant")
	t.Name = b.prefix + name
	b.last().Attribute = []*protos.AttributeProto{{Name: "value", Type: protos.AttributeProto_TENSOR, T: t}}
	return out
}

// ints adds an int64 vector constant.
func (b *nodeBuilder) ints(name string, v ...int64) string {
	return b.constant(name, &protos.TensorProto{DataType: int32(protos.TensorProto_INT64), Dims: []int64{int64(len(v))}, Int64Data: v})
}

// reduceMean is the mean over axis 2, kept.
func (b *nodeBuilder) reduceMean(x string) string {
	if b.opset >= 18 {
		return b.op("ReduceMean", x, b.ints("axes", 2))
	}
	out := b.op("ReduceMean", x)
	b.last().Attribute = []*protos.AttributeProto{
		{Name: "axes", Type: protos.AttributeProto_INTS, Ints: []int64{2}},
		{Name: "keepdims", Type: protos.AttributeProto_INT, I: 1},
	}
	return out
}

// unsqueeze is v [C] as [C, 1].
func (b *nodeBuilder) unsqueeze(v string) string {
	if b.opset >= 13 {
		return b.op("Unsqueeze", v, b.ints("axis", 1))
	}
	out := b.op("Unsqueeze", v)
	b.last().Attribute = []*protos.AttributeProto{{Name: "axes", Type: protos.AttributeProto_INTS, Ints: []int64{1}}}
	return out
}

// rewriteNearestResize replaces every Resize node that upsamples by integer
// factors with mode "nearest" and PyTorch's coordinates (asymmetric, floor:
// out[i] = in[⌊i/k⌋], what F.interpolate(mode="nearest") exports) by
//
//	Reshape(Expand(Unsqueeze(X, [1, 3, …]), [1, k₀, 1, k₁, …]), Shape(X)·k),
//
// each value repeated k times along each axis: onnx-gomlx converts Resize
// to GoMLX's Interpolate, whose gradient through nearest interpolation does
// not match PyTorch's (the forward does), and dfx's traces are gradients.
// Resize nodes of other kinds are left to onnx-gomlx. It returns the number
// of nodes replaced.
func rewriteNearestResize(m *protos.ModelProto) int {
	consts := constantValues(m.Graph)
	opset := opsetOf(m)
	var nodes []*protos.NodeProto
	n := 0
	for _, node := range m.Graph.Node {
		scales := nearestScales(node, consts)
		if scales == nil || opset < 13 {
			nodes = append(nodes, node)
			continue
		}
		b := &nodeBuilder{prefix: fmt.Sprintf("dfx_up%d_", n), opset: opset}
		x := node.Input[0]
		axes := make([]int64, len(scales))
		expand := make([]int64, 0, 2*len(scales))
		for i, k := range scales {
			axes[i] = int64(2*i + 1)
			expand = append(expand, 1, k)
		}
		u := b.op("Unsqueeze", x, b.ints("axes", axes...))
		e := b.op("Expand", u, b.ints("expand", expand...))
		size := b.op("Mul", b.op("Shape", x), b.ints("scales", scales...))
		b.named("Reshape", node.Output[0], e, size)
		nodes = append(nodes, b.nodes...)
		n++
	}
	m.Graph.Node = nodes
	return n
}

// nearestScales are the integer upsampling factors of a Resize node in
// PyTorch's nearest mode with constant scales, nil for any other node.
func nearestScales(node *protos.NodeProto, consts map[string]*protos.TensorProto) []int64 {
	if node.OpType != "Resize" || (node.Domain != "" && node.Domain != "ai.onnx") || len(node.Input) < 3 || len(node.Output) != 1 {
		return nil
	}
	attrs := map[string]string{"mode": "nearest", "coordinate_transformation_mode": "half_pixel", "nearest_mode": "round_prefer_floor"}
	for _, a := range node.Attribute {
		if a.Type == protos.AttributeProto_STRING {
			attrs[a.Name] = string(a.S)
		} else if a.Name != "cubic_coeff_a" {
			return nil // exclude_outside, extrapolation_value, antialias, axes, keep_aspect_ratio_policy
		}
	}
	if attrs["mode"] != "nearest" || attrs["coordinate_transformation_mode"] != "asymmetric" || attrs["nearest_mode"] != "floor" {
		return nil
	}
	if len(node.Input) > 3 && node.Input[3] != "" {
		return nil // sizes, not scales
	}
	t, ok := consts[node.Input[2]]
	if !ok || protos.TensorProto_DataType(t.DataType) != protos.TensorProto_FLOAT {
		return nil
	}
	vals := t.FloatData
	if len(vals) == 0 && len(t.RawData)%4 == 0 {
		for i := 0; i < len(t.RawData); i += 4 {
			vals = append(vals, math.Float32frombits(binary.LittleEndian.Uint32(t.RawData[i:])))
		}
	}
	if len(vals) == 0 {
		return nil
	}
	out := make([]int64, len(vals))
	for i, v := range vals {
		if v < 1 || v != float32(math.Round(float64(v))) {
			return nil
		}
		out[i] = int64(v)
	}
	return out
}

// constantValues maps the outputs of Constant nodes and the initializers to
// their tensors.
func constantValues(g *protos.GraphProto) map[string]*protos.TensorProto {
	out := map[string]*protos.TensorProto{}
	for _, t := range g.Initializer {
		out[t.Name] = t
	}
	for _, node := range g.Node {
		if node.OpType != "Constant" || len(node.Output) != 1 {
			continue
		}
		for _, a := range node.Attribute {
			if a.Name == "value" && a.T != nil {
				out[node.Output[0]] = a.T
			}
		}
	}
	return out
}

// bypassIdentity removes every Identity node, its readers reading its
// input instead: onnx-gomlx converts it to GoMLX's Identity, which has no
// gradient, and an Identity on the data path (what some exporters leave of
// nn.Identity or of a dropout) would stop every VJP. A graph output made
// by an Identity is renamed to what it copies. It returns the nodes removed.
func bypassIdentity(m *protos.ModelProto) int {
	source := map[string]string{}
	var nodes []*protos.NodeProto
	for _, node := range m.Graph.Node {
		if node.OpType == "Identity" && (node.Domain == "" || node.Domain == "ai.onnx") && len(node.Input) == 1 && len(node.Output) == 1 {
			source[node.Output[0]] = node.Input[0]
			continue
		}
		nodes = append(nodes, node)
	}
	resolve := func(name string) string {
		for range len(source) + 1 {
			s, ok := source[name]
			if !ok {
				break
			}
			name = s
		}
		return name
	}
	for _, node := range nodes {
		for i, in := range node.Input {
			node.Input[i] = resolve(in)
		}
	}
	for _, out := range m.Graph.Output {
		out.Name = resolve(out.Name)
	}
	m.Graph.Node = nodes
	return len(source)
}
