package onnximport

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
	"google.golang.org/protobuf/proto"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/tensormat"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// strippedGraph is m serialised with its initializers' data removed (names,
// dtypes and dimensions kept): the weights are the store's variables.
func strippedGraph(m *protos.ModelProto) ([]byte, error) {
	c := proto.Clone(m).(*protos.ModelProto)
	for _, t := range c.Graph.Initializer {
		t.RawData, t.FloatData, t.DoubleData, t.Int32Data, t.Int64Data, t.Uint64Data = nil, nil, nil, nil, nil, nil
	}
	return proto.Marshal(c)
}

// tensorOf is the value of an initializer held in the file itself.
func tensorOf(t *protos.TensorProto) (*tensors.Tensor, error) {
	if t.DataLocation == protos.TensorProto_EXTERNAL || len(t.ExternalData) > 0 {
		return nil, bad("initializer %q lives in an external data file; export the weights inside the .onnx file", t.Name)
	}
	sh, err := models.ONNXTensorShape(t)
	if err != nil {
		return nil, bad("%v", err)
	}
	if t.Name == "" || strings.ContainsAny(t.Name, "\x00") {
		return nil, bad("an initializer has no usable name")
	}
	n := sh.Size()
	if t.RawData != nil {
		if want := n * sh.DType.Size(); len(t.RawData) != want {
			return nil, bad("initializer %q holds %d bytes, its shape %v needs %d (a truncated file?)", t.Name, len(t.RawData), sh.Dimensions, want)
		}
		v := tensors.FromShape(sh)
		if err := v.MutableBytes(func(b []byte) { copy(b, t.RawData) }); err != nil {
			return nil, err
		}
		return v, checkFinite(t.Name, v)
	}
	var v *tensors.Tensor
	count := 0
	switch sh.DType {
	case dtypes.Float32:
		v, count = tensors.FromFlatDataAndDimensions(t.FloatData, sh.Dimensions...), len(t.FloatData)
	case dtypes.Float64:
		v, count = tensors.FromFlatDataAndDimensions(t.DoubleData, sh.Dimensions...), len(t.DoubleData)
	case dtypes.Int32:
		v, count = tensors.FromFlatDataAndDimensions(t.Int32Data, sh.Dimensions...), len(t.Int32Data)
	case dtypes.Int64:
		v, count = tensors.FromFlatDataAndDimensions(t.Int64Data, sh.Dimensions...), len(t.Int64Data)
	default:
		return nil, bad("initializer %q: %s values outside raw_data are not read", t.Name, sh.DType)
	}
	if count != n {
		return nil, bad("initializer %q holds %d values, its shape %v needs %d (a truncated file?)", t.Name, count, sh.Dimensions, n)
	}
	return v, checkFinite(t.Name, v)
}

func checkFinite(name string, t *tensors.Tensor) error {
	if !t.DType().IsFloat() {
		return nil
	}
	for _, x := range tensormat.Copy(t) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return bad("initializer %q holds NaN or Inf", name)
		}
	}
	return nil
}

// storeOf is a store with the network's hyperparameters and its
// initializers as variables under /score/ONNX.
func storeOf(m *protos.ModelProto, spec *models.ONNXSpec, p models.Parameterisation, opt Options) (*model.Store, error) {
	encoded, err := spec.Encode()
	if err != nil {
		return nil, err
	}
	names, _, dts, _ := graphInputs(m.Graph)
	dt := "float32"
	if dts[0] == dtypes.Float64 {
		dt = "float64"
	}
	store := model.NewStore()
	store.SetParams(map[string]any{models.ParamDType: dt, models.ParamNumClasses: opt.NumClasses})
	net := store.RootScope().At(models.ScoreScope)
	net.SetParams(map[string]any{models.ParamArch: models.ArchONNX, models.ParamONNX: encoded, models.ParamParam: p.String()})
	vars := net.At(models.ONNXScope)
	seen := map[string]bool{}
	for _, t := range m.Graph.Initializer {
		name := models.ONNXVariableName(t.Name)
		if seen[name] {
			return nil, bad("initializer %q defined twice", t.Name)
		}
		seen[name] = true
		v, err := tensorOf(t)
		if err != nil {
			return nil, err
		}
		if _, err := vars.CreateVariable(name, v); err != nil {
			return nil, bad("initializer %q: %v", t.Name, err)
		}
	}
	if len(names) == 0 {
		return nil, bad("the graph has no input")
	}
	return store, nil
}

var unimplementedOp = regexp.MustCompile(`unimplemented ONNX op "([^"]+)"`)

// trialConversion builds ε_θ and the gradient of Σε_θ for two points on
// the Go backend and runs it once: an op onnx-gomlx cannot convert, or
// shapes that do not fit, show here rather than in a study.
func trialConversion(im *Imported) (err error) {
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	store, err := im.Store.Clone() // its values move to this backend, which goes with it
	if err != nil {
		return err
	}
	net, err := models.NewAccessNet(backend, store, im.Schedule, false)
	if err != nil {
		return bad("%v", err)
	}
	lo, hi := im.Schedule.Interval()
	c, err := schedule.At(im.Schedule, lo+0.5*(hi-lo))
	if err != nil {
		return err
	}
	dt, _ := models.DTypeOf(im.Store)
	const b = 2
	d := im.Dim()
	caught := exceptions.TryCatch[error](func() {
		exec, err := model.NewExec(backend, net.Store, func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return graph.Gradient(graph.ReduceAllSum(net.Eps(scope, x, alpha, sigma)), x)[0]
		})
		if err != nil {
			panic(err)
		}
		_, err = exec.Exec(tensors.FromShape(shapes.Make(dt, b, d)), tensormat.Filled(dt, b, c.Alpha), tensormat.Filled(dt, b, c.Sigma))
		if err != nil {
			panic(err)
		}
	})
	if caught == nil {
		return nil
	}
	msg := caught.Error()
	if op := unimplementedOp.FindStringSubmatch(msg); op != nil {
		return bad("op %s cannot be converted (onnx-gomlx has no converter for it)", op[1])
	}
	first, _, _ := strings.Cut(msg, "\n")
	return bad("the graph does not convert: %s", first)
}

// maxFileBytes is protobuf's own bound on one message.
const maxFileBytes = 2 << 30

// ReadFile is Import of the regular file at path (input.ReadAll), its
// errors naming the file.
func ReadFile(path string, opt Options) (*Imported, error) {
	raw, err := input.ReadAll(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("onnximport: %w: %w", err, ErrBadModel)
	}
	im, err := Import(raw, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return im, nil
}

// File is the encoded Checkpoint(name), written by producer.
func (im *Imported) File(name, producer string) ([]byte, error) {
	c, err := im.Checkpoint(name)
	if err != nil {
		return nil, err
	}
	c.Header.Producer = producer
	return c.Encode()
}

// Checkpoint is the imported network as a dfx "weights" checkpoint: the
// graph, its weights, parameterisation, schedule, time convention and
// layout (the score network's hyperparameters) and the ONNX file's SHA-256
// (Provenance.ONNX); name says where it came from.
func (im *Imported) Checkpoint(name string) (*checkpoint.Checkpoint, error) {
	c, err := checkpoint.Weights(im.Store, im.Dim(), []string{models.ScoreScope}, nil)
	if err != nil {
		return nil, err
	}
	p := checkpoint.Provenance{
		Data:       fmt.Sprintf("unknown: imported from the ONNX file %s", name),
		Scaling:    "unknown: what the exported network takes",
		Dequantize: "unknown",
		ONNX:       im.SHA256,
	}
	if err := checkpoint.Stamp(c, im.Schedule, p); err != nil {
		return nil, err
	}
	return c, nil
}
