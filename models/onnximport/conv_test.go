package onnximport

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/onnx-gomlx/onnx/parser"
	"google.golang.org/protobuf/proto"

	"github.com/dfx-lab/dfx/models"
)

// convCase is a one-Conv ONNX graph: input x [n, c, h, w], weight
// [o, c/group, kh, kw], optional bias, and the node's attributes.
type convCase struct {
	n, c, h, w, o, kh, kw int
	strides, pads, dils   []int64
	group                 int64
	autoPad               string
	bias                  bool
}

func (cc convCase) String() string {
	return fmt.Sprintf("x%dx%dx%dx%d/w%dx%dx%d/s%v/p%v/d%v/g%d/bias=%v", cc.n, cc.c, cc.h, cc.w, cc.o, cc.kh, cc.kw, cc.strides, cc.pads, cc.dils, cc.group, cc.bias)
}

// model is the graph, weights drawn from rng.
func (cc convCase) model(rng *rand.Rand) *protos.ModelProto {
	group := max(cc.group, 1)
	floats := func(name string, dims ...int64) *protos.TensorProto {
		size := int64(1)
		for _, d := range dims {
			size *= d
		}
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return &protos.TensorProto{Name: name, DataType: int32(protos.TensorProto_FLOAT), Dims: dims, FloatData: v}
	}
	node := &protos.NodeProto{Name: "conv", OpType: "Conv", Input: []string{"x", "W"}, Output: []string{"y"}}
	inits := []*protos.TensorProto{floats("W", int64(cc.o), int64(cc.c)/group, int64(cc.kh), int64(cc.kw))}
	if cc.bias {
		node.Input = append(node.Input, "B")
		inits = append(inits, floats("B", int64(cc.o)))
	}
	ints := func(name string, v []int64) {
		if v != nil {
			node.Attribute = append(node.Attribute, &protos.AttributeProto{Name: name, Type: protos.AttributeProto_INTS, Ints: v})
		}
	}
	ints("kernel_shape", []int64{int64(cc.kh), int64(cc.kw)})
	ints("strides", cc.strides)
	ints("pads", cc.pads)
	ints("dilations", cc.dils)
	if cc.group != 0 {
		node.Attribute = append(node.Attribute, &protos.AttributeProto{Name: "group", Type: protos.AttributeProto_INT, I: cc.group})
	}
	if cc.autoPad != "" {
		node.Attribute = append(node.Attribute, &protos.AttributeProto{Name: "auto_pad", Type: protos.AttributeProto_STRING, S: []byte(cc.autoPad)})
	}
	dim := func(v int64) *protos.TensorShapeProto_Dimension {
		return &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimValue{DimValue: v}}
	}
	x := &protos.ValueInfoProto{Name: "x", Type: &protos.TypeProto{Value: &protos.TypeProto_TensorType{TensorType: &protos.TypeProto_Tensor{
		ElemType: int32(protos.TensorProto_FLOAT),
		Shape:    &protos.TensorShapeProto{Dim: []*protos.TensorShapeProto_Dimension{dim(int64(cc.n)), dim(int64(cc.c)), dim(int64(cc.h)), dim(int64(cc.w))}},
	}}}}
	y := &protos.ValueInfoProto{Name: "y", Type: &protos.TypeProto{Value: &protos.TypeProto_TensorType{TensorType: &protos.TypeProto_Tensor{ElemType: int32(protos.TensorProto_FLOAT)}}}}
	return &protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Version: 17}},
		Graph: &protos.GraphProto{Name: "conv", Node: []*protos.NodeProto{node}, Initializer: inits, Input: []*protos.ValueInfoProto{x}, Output: []*protos.ValueInfoProto{y}}}
}

// convRun is y = the graph's output at x and ∂(Σ weights·y)/∂x, by onnx-gomlx on backend.
func convRun(t *testing.T, backend compute.Backend, m *protos.ModelProto, x, weights []float32, cc convCase) (y, grad []float32) {
	t.Helper()
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	om, err := parser.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	om.DisableFusion()
	store := model.NewStore()
	if err := om.VariablesToScope(store.RootScope()); err != nil {
		t.Fatal(err)
	}
	ho, wo := cc.outputSize()
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		out := om.CallGraph(scope, in[0].Graph(), map[string]*graph.Node{"x": in[0]}, "y")[0]
		return []*graph.Node{out, graph.Gradient(graph.ReduceAllSum(graph.Mul(out, in[1])), in[0])[0]}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(tensors.FromFlatDataAndDimensions(x, cc.n, cc.c, cc.h, cc.w), tensors.FromFlatDataAndDimensions(weights, cc.n, cc.o, ho, wo))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](res[0]), tensors.MustCopyFlatData[float32](res[1])
}

// The rewrite of Conv into matrix products computes what onnx-gomlx's ConvGeneral
// computes, outputs and x-gradients, for the geometries it takes, and
// leaves the others alone.
func TestConvRewriteMatchesConvGeneral(t *testing.T) {
	rewritten := []convCase{
		{n: 2, c: 3, h: 8, w: 8, o: 4, kh: 3, kw: 3, pads: []int64{1, 1, 1, 1}, bias: true},
		{n: 2, c: 3, h: 8, w: 7, o: 5, kh: 3, kw: 3, strides: []int64{2, 2}, pads: []int64{1, 1, 1, 1}, bias: true},
		{n: 3, c: 4, h: 6, w: 6, o: 2, kh: 1, kw: 1},
		{n: 1, c: 2, h: 9, w: 9, o: 3, kh: 1, kw: 1, strides: []int64{2, 2}, bias: true},
		{n: 2, c: 2, h: 11, w: 10, o: 3, kh: 3, kw: 2, strides: []int64{2, 1}, pads: []int64{2, 0, 1, 1}, dils: []int64{2, 3}},
		{n: 1, c: 3, h: 7, w: 7, o: 2, kh: 5, kw: 5, pads: []int64{2, 2, 2, 2}, group: 1, autoPad: "NOTSET", bias: true},
		{n: 2, c: 2, h: 5, w: 5, o: 2, kh: 3, kw: 3}, // no padding
		{n: 1, c: 2, h: 9, w: 8, o: 3, kh: 3, kw: 3, pads: []int64{2, 2, 2, 2}, dils: []int64{2, 2}, bias: true},
	}
	refused := []convCase{
		{n: 1, c: 4, h: 6, w: 6, o: 4, kh: 3, kw: 3, pads: []int64{1, 1, 1, 1}, group: 2},
		{n: 1, c: 2, h: 6, w: 6, o: 2, kh: 3, kw: 3, autoPad: "SAME_UPPER"},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(size int) []float32 {
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	for k, cc := range append(rewritten, refused...) {
		t.Run(cc.String(), func(t *testing.T) {
			m := cc.model(rng)
			r := proto.Clone(m).(*protos.ModelProto)
			if n, want := rewriteConv(r), k < len(rewritten); (n == 1) != want {
				t.Fatalf("rewriteConv replaced %d nodes, want it to replace the Conv: %v", n, want)
			}
			if k >= len(rewritten) {
				if !proto.Equal(r, m) {
					t.Error("a Conv left to onnx-gomlx was changed")
				}
				return
			}
			ho, wo := cc.outputSize()
			x, weights := random(cc.n*cc.c*cc.h*cc.w), random(cc.n*cc.o*ho*wo)
			y, g := convRun(t, backend, r, x, weights, cc)
			yDirect, gDirect := cc.direct(m, x, weights)
			if len(y) != len(yDirect) {
				t.Fatalf("output of %d values, want %d", len(y), len(yDirect))
			}
			if w := worstRelative(y, yDirect); w > 1e-5 {
				t.Errorf("outputs differ from the direct sum's by %.3g (relative)", w)
			}
			if w := worstRelative(g, gDirect); w > 1e-5 {
				t.Errorf("x-gradients differ from the direct sum's by %.3g (relative)", w)
			}
			if cc.strides != nil && cc.dils != nil {
				return // ConvGeneral takes strides or dilations, not both
			}
			yGeneral, gGeneral := convRun(t, backend, m, x, weights, cc)
			if w := worstRelative(y, yGeneral); w > 1e-5 {
				t.Errorf("outputs differ from ConvGeneral's by %.3g (relative)", w)
			}
			if w := worstRelative(g, gGeneral); w > 1e-5 {
				t.Errorf("x-gradients differ from ConvGeneral's by %.3g (relative)", w)
			}
		})
	}
}

// direct is Conv's output at x and ∂(Σ weights·y)/∂x by its defining sum,
// in float64, with m's weight and bias.
func (cc convCase) direct(m *protos.ModelProto, x, weights []float32) (y, grad []float32) {
	kernel, bias := m.Graph.Initializer[0].FloatData, make([]float32, cc.o)
	if cc.bias {
		bias = m.Graph.Initializer[1].FloatData
	}
	at := func(v []int64, i int, def int) int {
		if v == nil {
			return def
		}
		return int(v[i])
	}
	ho, wo := cc.outputSize()
	y, grad = make([]float32, cc.n*cc.o*ho*wo), make([]float32, len(x))
	g := make([]float64, len(x))
	for n := range cc.n {
		for o := range cc.o {
			for oh := range ho {
				for ow := range wo {
					out := n*cc.o*ho*wo + (o*ho+oh)*wo + ow
					sum := float64(bias[o])
					for c := range cc.c {
						for i := range cc.kh {
							for j := range cc.kw {
								ih := oh*at(cc.strides, 0, 1) - at(cc.pads, 0, 0) + i*at(cc.dils, 0, 1)
								iw := ow*at(cc.strides, 1, 1) - at(cc.pads, 1, 0) + j*at(cc.dils, 1, 1)
								if ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w {
									continue
								}
								in := ((n*cc.c+c)*cc.h+ih)*cc.w + iw
								k := float64(kernel[((o*cc.c+c)*cc.kh+i)*cc.kw+j])
								sum += k * float64(x[in])
								g[in] += k * float64(weights[out])
							}
						}
					}
					y[out] = float32(sum)
				}
			}
		}
	}
	for i, v := range g {
		grad[i] = float32(v)
	}
	return y, grad
}

// outputSize is Conv's output height and width: ⌊(H + pads − d(k−1) − 1)/s⌋ + 1.
func (cc convCase) outputSize() (ho, wo int) {
	at := func(v []int64, i int, def int) int {
		if v == nil {
			return def
		}
		return int(v[i])
	}
	size := func(in, k, axis int) int {
		return (in+at(cc.pads, axis, 0)+at(cc.pads, axis+2, 0)-at(cc.dils, axis, 1)*(k-1)-1)/at(cc.strides, axis, 1) + 1
	}
	return size(cc.h, cc.kh, 0), size(cc.w, cc.kw, 1)
}

// worstRelative is the largest |got − want| / (1 + |want|).
func worstRelative(got, want []float32) float64 {
	w := 0.0
	for i, v := range want {
		w = math.Max(w, math.Abs(float64(got[i]-v))/(1+math.Abs(float64(v))))
	}
	return w
}
