// Package onnximport turns an ONNX noise-prediction network (e.g. exported
// by torch.onnx.export from a PyTorch U-Net) into dfx's one model contract:
// a store whose score network is the ONNX graph (models.ArchONNX), an
// access.Net over it, and a checkpoint that records the graph, its weights,
// its parameterisation, schedule, time convention, input layout and the
// SHA-256 of the ONNX file.
//
// The network is called as out = net(x, S·t) or net(x, S·σ) [, class],
// x in the layout of its first input (NCHW images or flat vectors; dfx's
// points are the flat C-order rows of that layout), the time as its second
// input; out is ε, x̂₀, v or the score (Options.Param).
package onnximport

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"google.golang.org/protobuf/proto"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// ErrBadModel is wrapped by every error about the ONNX file or the options
// given for it (bad input, not a failure of dfx).
var ErrBadModel = errors.New("bad ONNX model")

// Options say how an ONNX network is called (see the package doc).
type Options struct {
	Param      string            // eps, x0 (y), v or score
	Schedule   schedule.Schedule // ve, vp, subvp or edm (or linear)
	Time       string            // models.TimeT (default) or models.TimeSigma
	TimeScale  float64           // S > 0
	ClassInput string            // the class-label input, "" for an unconditional network
	NumClasses int               // K real classes with ClassInput; label K is the null class
}

// Imported is an imported network: a store holding it as the score
// network (models.ScoreScope) and what it was made from.
type Imported struct {
	Store    *model.Store
	Spec     *models.ONNXSpec
	Schedule schedule.Schedule
	SHA256   string // of the ONNX file
	Rewrites int    // nodes rewritten to primitive ops (InstanceNormalization, nearest Resize, Conv) or removed (Identity)
}

// Dim is the data dimension d of the network's points.
func (im *Imported) Dim() int { return im.Spec.Dim() }

// Net is the imported network as dfx/access's model contract (no DF-TM
// network), on backend.
func (im *Imported) Net(backend compute.Backend) (*access.Net, error) {
	return models.NewAccessNet(backend, im.Store, im.Schedule, false)
}

func bad(format string, args ...any) error {
	return fmt.Errorf("onnximport: %s: %w", fmt.Sprintf(format, args...), ErrBadModel)
}

// Import reads an ONNX file's contents raw and checks that it converts
// (building ε_θ and its gradient once, on the Go backend); every error
// about raw or opt wraps ErrBadModel.
func Import(raw []byte, opt Options) (*Imported, error) { return importModel(raw, opt, true) }

// importModel is Import, with 2-D convolutions rewritten as sums of matrix
// products (rewriteConv) or left to onnx-gomlx's ConvGeneral.
func importModel(raw []byte, opt Options, convProducts bool) (*Imported, error) {
	p, err := checkOptions(&opt)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	var m protos.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, bad("not an ONNX model (%v)", err)
	}
	if m.Graph == nil || len(m.Graph.Node) == 0 || m.IrVersion <= 0 {
		return nil, bad("not an ONNX model (no graph)")
	}
	if err := checkReferences(m.Graph); err != nil {
		return nil, err
	}
	rewrites, err := rewriteInstanceNorm(&m)
	if err != nil {
		return nil, bad("%v", err)
	}
	rewrites += rewriteNearestResize(&m) + bypassIdentity(&m)
	if convProducts {
		rewrites += rewriteConv(&m)
	}
	spec, err := specOf(&m, opt)
	if err != nil {
		return nil, err
	}
	store, err := storeOf(&m, spec, p, opt)
	if err != nil {
		return nil, err
	}
	im := &Imported{Store: store, Spec: spec, Schedule: opt.Schedule, SHA256: hex.EncodeToString(sum[:]), Rewrites: rewrites}
	if err := trialConversion(im); err != nil {
		return nil, err
	}
	return im, nil
}

func checkOptions(opt *Options) (models.Parameterisation, error) {
	p, err := models.ParseParameterisation(opt.Param)
	if err != nil || p == models.PredictEDM {
		return 0, bad("parameterisation %q, want eps, x0, v or score", opt.Param)
	}
	if opt.Time == "" {
		opt.Time = models.TimeT
	}
	if opt.Time != models.TimeT && opt.Time != models.TimeSigma {
		return 0, bad("time convention %q, want %s or %s", opt.Time, models.TimeT, models.TimeSigma)
	}
	if !(opt.TimeScale > 0) || math.IsInf(opt.TimeScale, 0) {
		return 0, bad("time scale %g, want a finite number > 0", opt.TimeScale)
	}
	if opt.Schedule == nil {
		return 0, bad("no schedule")
	}
	if opt.ClassInput != "" && opt.NumClasses < 1 {
		return 0, bad("class input %q needs the number of classes (≥ 1; label K is the null class)", opt.ClassInput)
	}
	if opt.ClassInput == "" && opt.NumClasses != 0 {
		return 0, bad("%d classes but no class input", opt.NumClasses)
	}
	return p, nil
}

// checkReferences checks that every node input is a graph input, an
// initializer or an earlier node's output (a truncated file loses some).
func checkReferences(g *protos.GraphProto) error {
	known := map[string]bool{"": true}
	for _, in := range g.Input {
		known[in.Name] = true
	}
	for _, t := range g.Initializer {
		known[t.Name] = true
	}
	for _, n := range g.Node {
		for _, in := range n.Input {
			if !known[in] {
				return bad("node %q (%s) reads %q, which nothing defines (a truncated or unsorted graph)", n.Name, n.OpType, in)
			}
		}
		for _, out := range n.Output {
			known[out] = true
		}
	}
	for _, out := range g.Output {
		if !known[out.Name] {
			return bad("output %q is not computed by the graph", out.Name)
		}
	}
	return nil
}

// graphInputs are the graph's inputs that are not initializers (older
// exports list the weights as inputs too), with their dimensions (−1 for a
// symbolic one) and dtypes.
func graphInputs(g *protos.GraphProto) (names []string, dims [][]int, dts []dtypes.DType, err error) {
	inits := map[string]bool{}
	for _, t := range g.Initializer {
		inits[t.Name] = true
	}
	for _, in := range g.Input {
		if inits[in.Name] {
			continue
		}
		tt, ok := in.GetType().GetValue().(*protos.TypeProto_TensorType)
		if !ok || tt.TensorType == nil || tt.TensorType.Shape == nil {
			return nil, nil, nil, bad("input %q is not a tensor of known rank", in.Name)
		}
		var d []int
		for _, dim := range tt.TensorType.Shape.Dim {
			if v, ok := dim.GetValue().(*protos.TensorShapeProto_Dimension_DimValue); ok {
				d = append(d, int(v.DimValue))
			} else {
				d = append(d, -1)
			}
		}
		names, dims = append(names, in.Name), append(dims, d)
		dt, _ := models.ONNXDType(tt.TensorType.ElemType) // InvalidDType for one dfx does not store
		dts = append(dts, dt)
	}
	return names, dims, dts, nil
}

// specOf reads the inputs' roles and the point layout: x is the first input
// ([B, …] with every other dimension fixed), the time the second ([B]),
// the class the one named by opt.ClassInput ([B], integer).
func specOf(m *protos.ModelProto, opt Options) (*models.ONNXSpec, error) {
	names, dims, dts, err := graphInputs(m.Graph)
	if err != nil {
		return nil, err
	}
	switch {
	case len(names) < 2:
		return nil, bad("no time input: the network takes only %q (a noise-prediction network takes the noisy state, then the time)", names)
	case opt.ClassInput == "" && len(names) > 2:
		return nil, bad("inputs %q: the network takes a 3rd input; name it with -class-input if it is the class", names)
	case opt.ClassInput != "" && (len(names) != 3 || names[2] != opt.ClassInput):
		return nil, bad("inputs %q, want the noisy state, the time and then the class %q", names, opt.ClassInput)
	}
	if opt.ClassInput != "" && (len(dims[2]) != 1 || !dts[2].IsInt()) {
		return nil, bad("class input %q is %s of dimensions %v, want integer labels [B]", names[2], dts[2], dims[2])
	}
	x, t := dims[0], dims[1]
	if len(x) < 2 || dts[0] != dtypes.Float32 && dts[0] != dtypes.Float64 {
		return nil, bad("input %q is %s of dimensions %v, want a float batch [B, …] of points", names[0], dts[0], x)
	}
	if slices.ContainsFunc(x[1:], func(n int) bool { return n < 1 }) {
		return nil, bad("input %q has dimensions %v: every dimension but the batch must be fixed", names[0], x)
	}
	if len(t) != 1 || !dts[1].IsFloat() && !dts[1].IsInt() {
		return nil, bad("time input %q is %s of dimensions %v, want a batch [B] of times", names[1], dts[1], t)
	}
	if len(m.Graph.Output) == 0 {
		return nil, bad("the graph has no output")
	}
	graph, err := strippedGraph(m)
	if err != nil {
		return nil, err
	}
	sc, err := checkpoint.SpecOf(opt.Schedule)
	if err != nil {
		return nil, bad("%v", err)
	}
	return &models.ONNXSpec{Graph: graph, Input: names[0], TimeInput: names[1], ClassInput: opt.ClassInput, Output: m.Graph.Output[0].Name,
		Layout: slices.Clone(x[1:]), TimeConvention: opt.Time, TimeScale: opt.TimeScale, ScheduleName: sc.Name, ScheduleParams: sc.Params}, nil
}
