package density

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models/onnximport/onnxtest"
)

// Density guidance runs on an imported network: the PyTorch MLP fixture
// (untrained, imported on the VP schedule) with its exact VJP trace. A
// Level target holds the tracked log-density ℓ at a level the unguided
// samples end away from, and the guided samples end on it.
func TestDensityGuidanceOnAnImportedNetwork(t *testing.T) {
	im := onnxtest.MLP(t, schedule.DefaultVP())
	net := onnxtest.Net(t, im)
	m, err := TraceModel(net, "vjp", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := SampleConfig{Schedule: im.Schedule, Grid: GridLogSNR, TMin: 1e-2, Steps: 20}
	xT := schedule.SamplePrior(schedule.Prior(im.Schedule), 4, 8, rand.New(rand.NewPCG(1, 1)))
	start := PriorStart(im.Schedule, xT)
	plain, err := Sample(context.Background(), m, nil, xT, start, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	mean := 0.0
	for _, e := range plain.Ell {
		mean += e / float64(len(plain.Ell))
	}
	level := mean + 2 // nats above the unguided samples' mean
	target := pfode.Level{At: func(float64) float64 { return level }, Slope: func(float64) float64 { return 0 }, Gain: 10}
	guided, err := Sample(context.Background(), m, target, xT, start, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range guided.Ell {
		t.Logf("row %d: ℓ %.4g unguided, %.4g guided, level %.4g", i, plain.Ell[i], e, level)
		if math.Abs(e-level) > 0.05 {
			t.Errorf("row %d: guided ℓ = %.4g, the level is %.4g (unguided %.4g)", i, e, level, plain.Ell[i])
		}
	}
	if guided.Guide.Evals == 0 {
		t.Error("no guided evaluation")
	}
}
