package models

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/onnx-gomlx/onnx"
	"github.com/gomlx/onnx-gomlx/onnx/parser"
	"google.golang.org/protobuf/proto"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// ArchONNX is a score network imported from an ONNX graph (ParamONNX): the
// graph is stored as a hyperparameter, its initializers as variables under
// the score scope's ONNXScope, and it is converted to GoMLX ops by
// onnx-gomlx each time a graph is built, so gradients run through it.
const ArchONNX = "onnx"

// ParamONNX is the score network's ONNXSpec (JSON) when ParamArch is ArchONNX.
const ParamONNX = "onnx"

// ONNXScope is where onnx-gomlx reads an ONNX graph's initializers from,
// under the scope the graph is called in.
const ONNXScope = onnx.ModelScope

// Time conventions of an imported network: what its time input receives.
const (
	TimeT     = "t"     // S·t, the schedule's time (diffusers' DDPM models: S = 999)
	TimeSigma = "sigma" // S·σ(t), the schedule's noise level (EDM, k-diffusion)
)

// ONNXSpec is how an imported ONNX network is called: the graph, which of
// its inputs take the noisy state, the time and the class, the layout a
// flat row of d values is reshaped to, and how a row's (α, σ) becomes the
// time input: TimeScale·t or TimeScale·σ (TimeConvention), t recovered from
// (α, σ) by the schedule (ScheduleName, ScheduleParams as schedule.New takes
// them).
type ONNXSpec struct {
	Graph          []byte // ModelProto with every initializer's data removed (they are variables)
	Input          string
	TimeInput      string
	ClassInput     string `json:",omitempty"`
	Output         string
	Layout         []int // dimensions of one point, e.g. [1, 28, 28] (NCHW without N) or [d]
	TimeConvention string
	TimeScale      float64
	ScheduleName   string
	ScheduleParams map[string]float64
}

// Dim is the number of values of one point.
func (s *ONNXSpec) Dim() int {
	d := 1
	for _, n := range s.Layout {
		d *= n
	}
	return d
}

// Schedule rebuilds the schedule of the time map.
func (s *ONNXSpec) Schedule() (schedule.Schedule, error) {
	return schedule.New(s.ScheduleName, s.ScheduleParams)
}

// String summarises the spec (its graph by size).
func (s *ONNXSpec) String() string {
	class := ""
	if s.ClassInput != "" {
		class = fmt.Sprintf(", class %s", s.ClassInput)
	}
	return fmt.Sprintf("ONNX graph (%d bytes without weights): %s %v per point, time %s = %g·%s, %s schedule%s → %s",
		len(s.Graph), s.Input, s.Layout, s.TimeInput, s.TimeScale, s.TimeConvention, s.ScheduleName, class, s.Output)
}

// Encode is the spec as the ParamONNX string.
func (s *ONNXSpec) Encode() (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

// ONNXSpecOf reads and checks the score network's ONNXSpec under scope.
func ONNXSpecOf(scope *model.Scope) (*ONNXSpec, error) {
	raw := model.GetParamOr(scope, ParamONNX, "")
	if raw == "" {
		return nil, fmt.Errorf("models: arch %s without its graph (parameter %s)", ArchONNX, ParamONNX)
	}
	return DecodeONNXSpec(raw)
}

// DecodeONNXSpec reads and checks a ParamONNX value.
func DecodeONNXSpec(raw string) (*ONNXSpec, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var s ONNXSpec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("models: ONNX spec: %w", err)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *ONNXSpec) check() error {
	switch {
	case len(s.Graph) == 0 || s.Input == "" || s.TimeInput == "" || s.Output == "":
		return fmt.Errorf("models: ONNX spec lacks its graph or an input or output name")
	case len(s.Layout) == 0 || len(s.Layout) > 4 || slices.ContainsFunc(s.Layout, func(n int) bool { return n < 1 || n > 1<<24 }):
		return fmt.Errorf("models: ONNX input layout %v", s.Layout)
	case s.TimeConvention != TimeT && s.TimeConvention != TimeSigma:
		return fmt.Errorf("models: time convention %q, want %s or %s", s.TimeConvention, TimeT, TimeSigma)
	case !(s.TimeScale > 0) || math.IsInf(s.TimeScale, 0):
		return fmt.Errorf("models: time scale %g, want a positive number", s.TimeScale)
	}
	_, err := s.Schedule()
	return err
}

// ONNXVariableName is the variable name onnx-gomlx gives the initializer
// called name (its scope separator replaced).
func ONNXVariableName(name string) string { return strings.ReplaceAll(name, model.ScopeSeparator, "|") }

// onnxGraph is the spec's graph.
func (s *ONNXSpec) onnxGraph() (*protos.ModelProto, error) {
	var m protos.ModelProto
	if err := proto.Unmarshal(s.Graph, &m); err != nil || m.Graph == nil {
		return nil, fmt.Errorf("models: the stored ONNX graph does not decode: %v", err)
	}
	return &m, nil
}

// ONNXVariableShapes is the path → shape of every variable an imported
// network reads: one per initializer of its graph, under ONNXScope of the
// score scope.
func ONNXVariableShapes(s *ONNXSpec) (map[string]shapes.Shape, error) {
	m, err := s.onnxGraph()
	if err != nil {
		return nil, err
	}
	out := map[string]shapes.Shape{}
	for _, t := range m.Graph.Initializer {
		sh, err := ONNXTensorShape(t)
		if err != nil {
			return nil, err
		}
		out["/"+ScoreScope+"/"+ONNXScope+"/"+ONNXVariableName(t.Name)] = sh
	}
	return out, nil
}

// onnxDTypes are the initializer dtypes an imported network may hold (those
// a checkpoint stores).
var onnxDTypes = map[protos.TensorProto_DataType]dtypes.DType{
	protos.TensorProto_FLOAT: dtypes.Float32, protos.TensorProto_DOUBLE: dtypes.Float64,
	protos.TensorProto_INT32: dtypes.Int32, protos.TensorProto_INT64: dtypes.Int64,
	protos.TensorProto_UINT32: dtypes.Uint32, protos.TensorProto_UINT64: dtypes.Uint64,
}

// ONNXDType is the dtype of an ONNX data type (TensorProto.DataType), if
// dfx stores it.
func ONNXDType(t int32) (dtypes.DType, bool) {
	dt, ok := onnxDTypes[protos.TensorProto_DataType(t)]
	return dt, ok
}

// ONNXTensorShape is the shape of an ONNX tensor of a dtype dfx stores.
func ONNXTensorShape(t *protos.TensorProto) (shapes.Shape, error) {
	dt, ok := ONNXDType(t.DataType)
	if !ok {
		return shapes.Shape{}, fmt.Errorf("models: ONNX tensor %q has data type %s (dfx stores float32, float64 and integer tensors)",
			t.Name, protos.TensorProto_DataType(t.DataType))
	}
	dims := make([]int, len(t.Dims))
	for i, d := range t.Dims {
		if d < 0 || d > math.MaxInt32 {
			return shapes.Shape{}, fmt.Errorf("models: ONNX tensor %q has dimensions %v", t.Name, t.Dims)
		}
		dims[i] = int(d)
	}
	return shapes.Make(dt, dims...), nil
}

// onnxModel is the spec's graph with its initializers' data read from the
// variables under scope (the score scope), parsed by onnx-gomlx.
func onnxModel(scope *model.Scope, s *ONNXSpec) onnx.Model {
	m, err := s.onnxGraph()
	if err != nil {
		panic(err)
	}
	vars := scope.At(ONNXScope)
	for _, t := range m.Graph.Initializer {
		v := vars.GetVariable(ONNXVariableName(t.Name))
		if v == nil {
			panic(fmt.Errorf("models: ONNX initializer %q has no variable under %s", t.Name, vars.Scope()))
		}
		val, err := v.Value()
		if err != nil {
			panic(fmt.Errorf("models: ONNX initializer %q: %w", t.Name, err))
		}
		if want, err := ONNXTensorShape(t); err != nil || !want.Equal(val.Shape()) {
			panic(fmt.Errorf("models: ONNX initializer %q is %s in the graph, %s in the store", t.Name, want, val.Shape()))
		}
		if err := val.ConstBytes(func(b []byte) { t.RawData = slices.Clone(b) }); err != nil {
			panic(err)
		}
	}
	raw, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	om, err := parser.Parse(raw)
	if err != nil {
		panic(fmt.Errorf("models: ONNX graph: %w", err))
	}
	// onnx-gomlx's fusions are inference rewrites; its attention fusion
	// (SDPA: MatMul → scale → Softmax → MatMul emitted as attention.Core in
	// the heads-first [B, H, S, D] layout) also matches the single-head,
	// rank-3 [B, HW, C] attention of DDPM-style U-Nets and then fails to
	// build ("DotGeneral lhs contracting axis 3 out of bounds for rank 3").
	// It would be safe only for rank-4 heads-first attention, which the
	// graph does not tell before conversion; dfx needs the exact graph (its
	// gradients are what the traces are made of), so every fusion is off.
	om.(interface{ DisableFusion() }).DisableFusion()
	return om
}

// onnxTrunk is the imported network's raw output [B, d] for in: the flat
// rows reshaped to the input layout, the time input from each row's (α, σ),
// the class input from in.Class.
func onnxTrunk(scope *model.Scope, in Inputs, outDim int) *graph.Node {
	s, err := ONNXSpecOf(scope)
	if err != nil {
		panic(err)
	}
	b, d := in.X.Shape().Dimensions[0], in.X.Shape().Dimensions[1]
	if d != s.Dim() || outDim != d {
		panic(fmt.Errorf("models: the ONNX network takes points of %d values (layout %v), given %d (output %d)", s.Dim(), s.Layout, d, outDim))
	}
	om := onnxModel(scope, s)
	names, inShapes := om.Inputs()
	dtypeOf := func(name string) dtypes.DType { return inShapes[slices.Index(names, name)].DType }
	x := graph.Reshape(in.X, append([]int{b}, s.Layout...)...)
	inputs := map[string]*graph.Node{s.Input: graph.ConvertDType(x, dtypeOf(s.Input))}
	t := onnxTimeInput(s, in.Sigma)
	if tdt := dtypeOf(s.TimeInput); tdt.IsInt() { // a discrete step index
		t = graph.Round(t)
	}
	inputs[s.TimeInput] = graph.ConvertDType(t, dtypeOf(s.TimeInput))
	if s.ClassInput != "" {
		if in.Class == nil {
			panic(fmt.Errorf("models: the ONNX network takes a class (input %q), none given", s.ClassInput))
		}
		inputs[s.ClassInput] = graph.ConvertDType(in.Class, dtypeOf(s.ClassInput))
	}
	out := om.CallGraph(scope, in.X.Graph(), inputs, s.Output)[0]
	if out.Shape().Size() != b*d {
		panic(fmt.Errorf("models: the ONNX network's output %q is %v for %d points of %d values", s.Output, out.Shape().Dimensions, b, d))
	}
	return graph.ConvertDType(graph.Reshape(out, b, d), in.X.DType())
}

// onnxTimeInput is what the network's time input receives for rows with
// noise levels σ [B]: TimeScale·σ, or TimeScale·t with t the schedule
// time of σ (ScheduleTimeGraph).
func onnxTimeInput(s *ONNXSpec, sigma *graph.Node) *graph.Node {
	if s.TimeConvention == TimeSigma {
		return graph.MulScalar(sigma, s.TimeScale)
	}
	sc, err := s.Schedule()
	if err != nil {
		panic(err)
	}
	return graph.MulScalar(ScheduleTimeGraph(sc, sigma), s.TimeScale)
}

// ScheduleTimeGraph is the time t [B] at which schedule s has the noise
// level σ [B] (its inverse, in closed form):
//
//	VE: t = log(σ/σ_min)/log(σ_max/σ_min);  EDM, linear: t = σ;
//	VP, sub-VP: with L = −2 log α = ½Δβ t² + β_min t (Δβ = β_max − β_min),
//	t = 2L/(β_min + √(β_min² + 2Δβ L)), L from σ (−log(1 − σ²) for VP,
//	−log(1 − σ) for sub-VP) to keep its precision at small t.
func ScheduleTimeGraph(s schedule.Schedule, sigma *graph.Node) *graph.Node {
	vp := func(l *graph.Node, betaMin, betaMax float64) *graph.Node {
		root := graph.Sqrt(graph.AddScalar(graph.MulScalar(l, 2*(betaMax-betaMin)), betaMin*betaMin))
		return graph.Div(graph.MulScalar(l, 2), graph.AddScalar(root, betaMin))
	}
	switch v := s.(type) {
	case schedule.VE:
		return graph.DivScalar(graph.Log(graph.DivScalar(sigma, v.SigmaMin)), math.Log(v.SigmaMax/v.SigmaMin))
	case schedule.EDM, schedule.Linear:
		return sigma
	case schedule.VP:
		return vp(graph.Neg(graph.Log1p(graph.Neg(graph.Square(sigma)))), v.BetaMin, v.BetaMax)
	case schedule.SubVP:
		return vp(graph.Neg(graph.Log1p(graph.Neg(sigma))), v.BetaMin, v.BetaMax)
	}
	panic(fmt.Errorf("models: no closed-form time of schedule %v (want ve, vp, subvp, edm or linear)", s))
}
