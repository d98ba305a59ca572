package likelihood

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/models/onnximport"
	"github.com/dfx-lab/dfx/models/onnximport/onnxtest"
)

// clusters are n points of dimension d around ±(1, …, 1), spread 0.3.
func clusters(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 5))
	x := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			x.Set(i, j, float64(2*(i%2)-1)+0.3*rng.NormFloat64())
		}
	}
	return x
}

// importedProblem is the PyTorch MLP fixture imported, with 40 training
// and 8 test points and its t_θ and ν_θ trained for a few steps in a
// folder: a researcher's problem (onnximport.NewProblem) and that folder.
func importedProblem(t *testing.T) (*onnximport.Imported, *onnximport.Data, string) {
	t.Helper()
	im := onnxtest.MLP(t, schedule.DefaultVE())
	enc, err := im.File("mlp.onnx", "test")
	if err != nil {
		t.Fatal(err)
	}
	eps, err := checkpoint.Decode(enc, "mlp.dfxckpt")
	if err != nil {
		t.Fatal(err)
	}
	data := &onnximport.Data{Name: "mlp-fixture", Eps: eps, Train: clusters(40, 8, 1), Test: clusters(8, 8, 2)}
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	nets := t.TempDir()
	small := map[string]any{models.ParamWidth: 16, models.ParamDepth: 1, models.ParamEmbedDim: 8, models.ParamBatchSize: 32}
	for obj, file := range map[models.Objective]string{models.DFTM: onnximport.TraceFile, models.DFTMCentred: onnximport.CentredTraceFile} {
		c, err := onnximport.TrainTrace(context.Background(), backend, eps, data.Train, onnximport.TraceOptions{Objective: obj, Steps: 20, Params: small})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(filepath.Join(nets, file)); err != nil {
			t.Fatal(err)
		}
	}
	return im, data, nets
}

// The exact-Fisher part runs on a researcher's data and imported network:
// the problem's reference is the Dirac mixture of the training points, its
// networks are the imported ε with t_θ and ν_θ, and every estimator is
// scored at every time and split.
func TestExactFisherStudyRunsOnAnImportedNetwork(t *testing.T) {
	im, data, nets := importedProblem(t)
	p, err := onnximport.NewProblem(*data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Dim != 8 || p.Schedule.Name() != "ve" {
		t.Errorf("problem of dimension %d on schedule %s, want 8 and ve (the network's)", p.Dim, p.Schedule.Name())
	}
	ctx := context.Background()
	// the reference is the training points' Dirac mixture: at a tiny σ its
	// denoiser returns each training point itself
	mix, err := p.Exact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := schedule.At(p.Schedule, 1e-5)
	ex, err := mix.Eval(mixture.Query{At: c, X: data.Train, Want: mixture.Denoiser})
	if err != nil {
		t.Fatal(err)
	}
	if !mat.EqualApprox(ex.Denoiser, data.Train, 1e-9) {
		t.Error("the exact reference is not the Dirac mixture of the training points")
	}
	nw, err := p.Networks(ctx, nets)
	if err != nil {
		t.Fatal(err)
	}
	direct := onnxtest.Net(t, im)
	c, _ = schedule.At(p.Schedule, 0.3)
	a, errA := nw.Net.EpsAt(c, data.Test)
	b, errB := direct.EpsAt(c, data.Test)
	if errA != nil || errB != nil || !mat.EqualApprox(a, b, 1e-6) || nw.Net.T == nil || nw.Net.Nu == nil {
		t.Errorf("the problem's networks are not the imported ε with t_θ and ν_θ (%v, %v)", errA, errB)
	}
	cfg := Config{Seed: 1, TruthTimes: []float64{0.05, 0.5}, TruthQueries: 4}
	res, err := Truth(ctx, p, nets, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 || len(res.Estimators) != 4 {
		t.Fatalf("%d rows of %d estimators, want 2 splits × 2 times of 4", len(res.Rows), len(res.Estimators))
	}
	if rep, err := res.Report(); err != nil || !strings.Contains(rep.Tables[0].Markdown(), "the 40 training points of mlp-fixture") {
		t.Errorf("the result's report does not name its reference (%v)", err)
	}
	for _, r := range res.Rows {
		if r.Split == "train" && r.T == 0.05 && math.Abs(r.ExactTrace*r.Sigma*r.Sigma/8-1) > 1e-3 {
			t.Errorf("train queries at σ = %.3g: exact tr F·σ²/d = %.4g, want 1 (the posterior is the query's own atom)", r.Sigma, r.ExactTrace*r.Sigma*r.Sigma/8)
		}
		for name, e := range r.RelErr {
			if math.IsNaN(e) || math.IsInf(e, 0) {
				t.Errorf("%s at t = %g (%s): relative error %g", name, r.T, r.Split, e)
			}
		}
	}
}
