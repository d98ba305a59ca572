package onnximport

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// syntheticPoints are n points of dimension d: two clusters at ±(1, …, 1)
// with spread 0.3.
func syntheticPoints(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := mat.NewDense(n, d, nil)
	for i := range n {
		sign := float64(2*(i%2) - 1)
		for j := range d {
			x.Set(i, j, sign+0.3*rng.NormFloat64())
		}
	}
	return x
}

// traceGap is, for t_θ, the mean |DF-TM trace − exact VJP trace|·σ²/d of
// the imported MLP with the trace network in c over points noised from
// data at a few times; for ν_θ, whose optimum is the ε-network's own
// error E[‖ε̂_θ − ε‖²/d | x_t] (which matches the VJP trace only for an
// exact ε-network, and the fixture's is untrained), the mean over the times
// of |mean ν_θ − mean ‖ε̂_θ − ε‖²/d| over the same points.
func traceGap(t *testing.T, eps, c *checkpoint.Checkpoint, obj models.Objective, data *mat.Dense) float64 {
	t.Helper()
	store, err := PairStore(eps, c)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	sched := schedule.DefaultVE()
	net, err := models.NewAccessNet(backend, store, sched, true)
	if err != nil {
		t.Fatal(err)
	}
	vjp, err := access.NewVJPTrace(net, 0)
	if err != nil {
		t.Fatal(err)
	}
	dftm, err := access.NewDFTM(net)
	if err != nil && obj == models.DFTM {
		t.Fatal(err)
	}
	nu, err := access.NewDFTMCentred(net)
	if err != nil && obj == models.DFTMCentred {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	n, d := data.Dims()
	gap := 0.0
	times := []float64{0.2, 0.4, 0.6}
	for _, tm := range times {
		at, _ := schedule.At(sched, tm)
		x, noise := mat.NewDense(n, d, nil), mat.NewDense(n, d, nil)
		for i := range n {
			for j := range d {
				noise.Set(i, j, rng.NormFloat64())
				x.Set(i, j, at.Alpha*data.At(i, j)+at.Sigma*noise.At(i, j))
			}
		}
		scale := at.Sigma * at.Sigma / float64(d) // tr F·σ²/d is O(1)
		if obj == models.DFTM {
			want, got := traces(t, vjp, at, x), traces(t, dftm, at, x)
			for i := range want {
				gap += math.Abs(got[i]-want[i]) * scale / float64(n)
			}
			continue
		}
		e, err := net.EpsAt(at, x)
		if err != nil {
			t.Fatal(err)
		}
		e.Sub(e, noise)
		meanNu, meanErr := 0.0, 0.0
		for i, tr := range traces(t, nu, at, x) {
			meanNu += (1 - tr*scale) / float64(n) // tr F = (d/σ²)(1 − ν)
			meanErr += mat.Dot(e.RowView(i), e.RowView(i)) / float64(d*n)
		}
		gap += math.Abs(meanNu - meanErr)
	}
	return gap / float64(len(times))
}

func traces(t *testing.T, est interface {
	Trace(schedule.Coefficients, *mat.Dense) ([]float64, error)
}, at schedule.Coefficients, x *mat.Dense) []float64 {
	t.Helper()
	tr, err := est.Trace(at, x)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTrainedTraceNetworkApproachesItsTarget(t *testing.T) {
	raw, _ := readFixture(t, "mlp")
	im, err := Import(raw, mlpOptions)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := im.File("mlp.onnx", "import")
	if err != nil {
		t.Fatal(err)
	}
	eps, err := checkpoint.Decode(enc, "mlp.dfxckpt") // as dfx train reads it
	if err != nil {
		t.Fatal(err)
	}
	digest, err := checkpoint.Digest(eps, models.ScoreScope)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	data := syntheticPoints(64, 8, 1)
	small := map[string]any{models.ParamWidth: 32, models.ParamDepth: 1, models.ParamEmbedDim: 8, models.ParamBatchSize: 64, models.ParamLearningRate: 3e-3}
	for _, obj := range []models.Objective{models.DFTM, models.DFTMCentred} {
		t.Run(obj.String(), func(t *testing.T) {
			gaps := map[int]float64{}
			for _, steps := range []int{1, 600} {
				c, err := TrainTrace(context.Background(), backend, eps, data, TraceOptions{Objective: obj, Steps: steps, Params: small, Data: "synthetic"})
				if err != nil {
					t.Fatal(err)
				}
				if p := c.Header.Provenance; p.EpsNetwork != digest || p.ONNX != im.SHA256 {
					t.Errorf("provenance ε-network %.12s, ONNX %.12s: want %.12s and %.12s", p.EpsNetwork, p.ONNX, digest, im.SHA256)
				}
				gaps[steps] = traceGap(t, eps, c, obj, data)
			}
			t.Logf("%s: gap (traceGap) after 1 step %.4g, after 600 %.4g", obj, gaps[1], gaps[600])
			if !(gaps[600] < 0.3*gaps[1]) {
				t.Errorf("training did not bring the trace network to its target: gap %.4g after 1 step, %.4g after 600", gaps[1], gaps[600])
			}
		})
	}
}

// A trace network's checkpoint may name its ε-network's ONNX file (a
// SHA-256) or none; anything else is refused.
func TestTraceCheckpointNamesAnONNXDigestOrNone(t *testing.T) {
	raw, _ := readFixture(t, "mlp")
	im, err := Import(raw, mlpOptions)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := im.File("mlp.onnx", "import")
	if err != nil {
		t.Fatal(err)
	}
	eps, err := checkpoint.Decode(enc, "mlp.dfxckpt")
	if err != nil {
		t.Fatal(err)
	}
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	small := map[string]any{models.ParamWidth: 8, models.ParamDepth: 1, models.ParamEmbedDim: 4, models.ParamBatchSize: 8}
	c, err := TrainTrace(context.Background(), backend, eps, syntheticPoints(8, 8, 1), TraceOptions{Objective: models.DFTM, Steps: 1, Params: small})
	if err != nil {
		t.Fatal(err)
	}
	for onnx, ok := range map[string]bool{im.SHA256: true, "": true, "mlp.onnx": false, im.SHA256[:40]: false} {
		c.Header.Provenance.ONNX = onnx
		enc, err := c.Encode()
		if err == nil {
			_, err = checkpoint.Decode(enc, "dftm.dfxckpt")
		}
		if (err == nil) != ok {
			t.Errorf("ONNX %q: error %v, want accepted %v", onnx, err, ok)
		}
	}
}
