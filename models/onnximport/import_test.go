package onnximport

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/tensormat"
	"github.com/dfx-lab/dfx/models"
)

// fixture is what scripts/onnx-fixtures.py wrote from PyTorch.
type fixture struct {
	T         []float64   `json:"t"`
	TimeInput []float64   `json:"time_input"`
	X         [][]float64 `json:"x"`
	Class     []int       `json:"class"`
	Out       [][]float64 `json:"out"`
	Weights   [][]float64 `json:"weights"`
	Grad      [][]float64 `json:"grad"`
	JacTrace  []float64   `json:"jac_trace"`
}

var testdata = filepath.Join("..", "testdata", "onnx")

func readFixture(t *testing.T, name string) ([]byte, *fixture) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testdata, name+".onnx"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(testdata, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(js, &f); err != nil {
		t.Fatal(err)
	}
	return raw, &f
}

// The reference networks and how they were exported (scripts/onnx-fixtures.py).
var (
	mlpOptions  = Options{Param: "eps", Schedule: schedule.DefaultVE(), Time: models.TimeSigma, TimeScale: 1}
	unetOptions = Options{Param: "v", Schedule: schedule.DefaultVP(), Time: models.TimeT, TimeScale: 999, ClassInput: "y", NumClasses: 4}
)

func rows(v [][]float64) *mat.Dense {
	m := mat.NewDense(len(v), len(v[0]), nil)
	for i, r := range v {
		m.SetRow(i, r)
	}
	return m
}

// rawOutputs runs the imported network's raw output (before its
// parameterisation is converted to ε) at the fixture's points and classes
// and the gradient ∂(Σ weights·out)/∂x, as PyTorch computed them.
func rawOutputs(t *testing.T, im *Imported, f *fixture) (out, grad *mat.Dense) {
	t.Helper()
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	b, d := len(f.X), len(f.X[0])
	alpha, sigma, class := make([]float64, b), make([]float64, b), make([]int32, b)
	for i, tm := range f.T {
		alpha[i], sigma[i] = im.Schedule.Alpha(tm), im.Schedule.Sigma(tm)
		if f.Class != nil {
			class[i] = int32(f.Class[i])
		}
	}
	exec, err := model.NewExec(backend, im.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		inputs := models.Inputs{X: in[0], Alpha: in[2], Sigma: in[3]}
		if f.Class != nil {
			inputs.Class = in[4]
		}
		o := models.ScoreOutput(scope, inputs)
		return []*graph.Node{o, graph.Gradient(graph.ReduceAllSum(graph.Mul(o, in[1])), in[0])[0]}
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := exec.Exec(tensormat.FromMatrix(dtypes.Float32, rows(f.X)), tensormat.FromMatrix(dtypes.Float32, rows(f.Weights)),
		tensormat.FromFlat(dtypes.Float32, alpha, b), tensormat.FromFlat(dtypes.Float32, sigma, b), tensors.FromFlatDataAndDimensions(class, b))
	if err != nil {
		t.Fatal(err)
	}
	return tensormat.Dense(res[0], b, d), tensormat.Dense(res[1], b, d)
}

// close reports the largest |got − want| / (1 + |want|).
func worst(got *mat.Dense, want [][]float64) float64 {
	w := 0.0
	for i, r := range want {
		for j, v := range r {
			w = math.Max(w, math.Abs(got.At(i, j)-v)/(1+math.Abs(v)))
		}
	}
	return w
}

const tol = 2e-4 // float32 through a few dozen layers

func TestImportedNetworksMatchPyTorch(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
	}{{"mlp", mlpOptions}, {"unet", unetOptions}} {
		t.Run(tc.name, func(t *testing.T) {
			raw, f := readFixture(t, tc.name)
			im, err := Import(raw, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			out, grad := rawOutputs(t, im, f)
			if w := worst(out, f.Out); w > tol {
				t.Errorf("outputs differ from PyTorch's by %.3g (relative)", w)
			}
			if w := worst(grad, f.Grad); w > tol {
				t.Errorf("x-gradients differ from PyTorch's by %.3g (relative)", w)
			}
		})
	}
}

func TestImportedNetworkIsTheModelContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
	}{{"mlp", mlpOptions}, {"unet", unetOptions}} {
		t.Run(tc.name, func(t *testing.T) {
			raw, f := readFixture(t, tc.name)
			im, err := Import(raw, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			backend, err := gobackend.New(models.GoBackendOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer backend.Finalize()
			net, err := im.Net(backend)
			if err != nil {
				t.Fatal(err)
			}
			vjp, err := access.NewVJPTrace(net, 0)
			if err != nil {
				t.Fatal(err)
			}
			p, _ := models.ParseParameterisation(tc.opt.Param)
			d := float64(len(f.X[0]))
			for i, tm := range f.T {
				c, err := schedule.At(im.Schedule, tm)
				if err != nil {
					t.Fatal(err)
				}
				x := mat.NewDense(1, len(f.X[i]), f.X[i])
				eps, err := epsAt(net, c, x, f, i)
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float64, len(f.X[i]))
				for j := range want {
					want[j] = models.EpsFrom(p, f.Out[i][j], f.X[i][j], c.Alpha, c.Sigma)
				}
				if w := worst(eps, [][]float64{want}); w > tol {
					t.Errorf("point %d: ε differs from PyTorch's by %.3g", i, w)
				}
				if f.Class != nil && f.Class[i] != tc.opt.NumClasses {
					continue // the traces are the unconditional (null-class) network's
				}
				tr, err := vjp.Trace(c, x)
				if err != nil {
					t.Fatal(err)
				}
				// tr F = tr(∂ε/∂x)/σ, with ∂ε/∂x from PyTorch's exact Jacobian trace of the raw output.
				jac := f.JacTrace[i]
				if p == models.PredictV {
					jac = (c.Sigma*d + c.Alpha*jac) / (c.Alpha*c.Alpha + c.Sigma*c.Sigma)
				}
				if want := jac / c.Sigma; math.Abs(tr[0]-want) > tol*(1+math.Abs(want)) {
					t.Errorf("point %d: exact VJP trace %g, PyTorch's Jacobian gives %g", i, tr[0], want)
				}
			}
		})
	}
}

// epsAt is ε at point i of f: the conditional prediction (classifier-free
// guidance at scale 1) for a class-conditional network.
func epsAt(net *access.Net, c schedule.Coefficients, x *mat.Dense, f *fixture, i int) (*mat.Dense, error) {
	if f.Class == nil {
		return net.EpsAt(c, x)
	}
	return net.GuidedEpsAt(c, x, []int{f.Class[i]}, []float64{1})
}
