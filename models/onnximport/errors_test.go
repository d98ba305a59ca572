package onnximport

import (
	"errors"
	"strings"
	"testing"

	"github.com/gomlx/compute-onnx/support/protos"
	"google.golang.org/protobuf/proto"

	"github.com/dfx-lab/dfx/models"
)

// edited is the fixture's ONNX file with edit applied to its graph.
func edited(t *testing.T, name string, edit func(*protos.ModelProto)) []byte {
	t.Helper()
	raw, _ := readFixture(t, name)
	var m protos.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	out, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// firstOp is the first node of type op.
func firstOp(t *testing.T, m *protos.ModelProto, op string) *protos.NodeProto {
	t.Helper()
	for _, n := range m.Graph.Node {
		if n.OpType == op {
			return n
		}
	}
	t.Fatalf("no %s node", op)
	return nil
}

// xOnly is an ONNX model out = Identity(x) with the single input x [B, 4].
func xOnly(t *testing.T) []byte {
	t.Helper()
	dim := func(v int64) *protos.TensorShapeProto_Dimension {
		if v < 0 {
			return &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimParam{DimParam: "B"}}
		}
		return &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimValue{DimValue: v}}
	}
	vi := func(name string) *protos.ValueInfoProto {
		return &protos.ValueInfoProto{Name: name, Type: &protos.TypeProto{Value: &protos.TypeProto_TensorType{TensorType: &protos.TypeProto_Tensor{
			ElemType: int32(protos.TensorProto_FLOAT), Shape: &protos.TensorShapeProto{Dim: []*protos.TensorShapeProto_Dimension{dim(-1), dim(4)}}}}}}
	}
	m := &protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Version: 17}}, Graph: &protos.GraphProto{
		Node:  []*protos.NodeProto{{OpType: "Identity", Input: []string{"x"}, Output: []string{"out"}}},
		Input: []*protos.ValueInfoProto{vi("x")}, Output: []*protos.ValueInfoProto{vi("out")},
	}}
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestImportRejectsBadInputWithOneClearError(t *testing.T) {
	mlp, _ := readFixture(t, "mlp")
	unet, _ := readFixture(t, "unet")
	with := func(o Options, edit func(*Options)) Options { edit(&o); return o }
	for _, tc := range []struct {
		name string
		raw  []byte
		opt  Options
		want string
	}{
		{"not ONNX", []byte("this is a text file, not an ONNX model\n"), mlpOptions, "not an ONNX model"},
		{"empty", nil, mlpOptions, "not an ONNX model"},
		{"truncated", mlp[:len(mlp)/2], mlpOptions, "ONNX model"},
		{"truncated U-Net", unet[:len(unet)*3/4], unetOptions, "ONNX model"},
		{"unconvertible op", edited(t, "mlp", func(m *protos.ModelProto) { firstOp(t, m, "Sin").OpType = "Hardmax" }), mlpOptions, "op Hardmax cannot be converted"},
		{"no time input", xOnly(t), mlpOptions, "no time input"},
		{"class input not named", unet, with(unetOptions, func(o *Options) { o.ClassInput, o.NumClasses = "", 0 }), "-class-input"},
		{"classes without a class input", unet, with(unetOptions, func(o *Options) { o.ClassInput = "" }), "no class input"},
		{"class input unknown", unet, with(unetOptions, func(o *Options) { o.ClassInput = "label" }), `class "label"`},
		{"class count missing", unet, with(unetOptions, func(o *Options) { o.NumClasses = 0 }), "number of classes"},
		{"unknown param", mlp, with(mlpOptions, func(o *Options) { o.Param = "noise" }), `parameterisation "noise"`},
		{"unknown time", mlp, with(mlpOptions, func(o *Options) { o.Time = "step" }), `time convention "step"`},
		{"bad time scale", mlp, with(mlpOptions, func(o *Options) { o.TimeScale = -1 }), "time scale"},
		{"output shape", edited(t, "mlp", func(m *protos.ModelProto) {
			last := m.Graph.Node[len(m.Graph.Node)-1] // Gemm → out [B, 8]: make it out [B, 8] + one column
			last.Output[0] = "pre"
			m.Graph.Node = append(m.Graph.Node, &protos.NodeProto{OpType: "Concat", Input: []string{"pre", "pre"}, Output: []string{"out"},
				Attribute: []*protos.AttributeProto{{Name: "axis", Type: protos.AttributeProto_INT, I: 1}}})
		}), mlpOptions, "output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Import(tc.raw, tc.opt)
			if err == nil {
				t.Fatal("imported")
			}
			if !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line wrapping ErrBadModel that says %q", err, tc.want)
			}
		})
	}
}

// The comparisons with PyTorch can fail: a wrong time convention, a
// dropped layer or a GroupNorm without its normalisation give outputs far
// from PyTorch's.
func TestPyTorchComparisonCatchesWrongImports(t *testing.T) {
	unetRaw, unetF := readFixture(t, "unet")
	mlpRaw, mlpF := readFixture(t, "mlp")
	sigmaAsT := mlpOptions
	sigmaAsT.Time = models.TimeT
	unscaled := unetOptions
	unscaled.TimeScale = 1
	noAttention := edited(t, "unet", func(m *protos.ModelProto) { firstOp(t, m, "Softmax").OpType = "Identity" })
	noNorm := edited(t, "unet", func(m *protos.ModelProto) {
		n := firstOp(t, m, "InstanceNormalization")
		n.OpType, n.Input, n.Attribute = "Identity", n.Input[:1], nil
	})
	for _, tc := range []struct {
		name string
		raw  []byte
		opt  Options
		f    *fixture
	}{
		{"time t for a σ network", mlpRaw, sigmaAsT, mlpF},
		{"time scale 1 for 999", unetRaw, unscaled, unetF},
		{"attention without softmax", noAttention, unetOptions, unetF},
		{"a GroupNorm dropped", noNorm, unetOptions, unetF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := Import(tc.raw, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := rawOutputs(t, im, tc.f)
			if w := worst(out, tc.f.Out); w < 100*tol {
				t.Errorf("outputs within %.3g of PyTorch's", w)
			}
		})
	}
}
