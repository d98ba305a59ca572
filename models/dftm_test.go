package models

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TestDFTMNetworkLearnsTheWeightedMeanSquaredNorm: with two clusters of different
// radius the optimum Σ wᵢ‖yᵢ‖²/d depends on x_t; at small noise it is each
// cluster's ‖y‖²/d (paper Algorithm tnet, Proposition optimal_t).
func TestDFTMNetworkLearnsTheWeightedMeanSquaredNorm(t *testing.T) {
	data := make([][]float64, 200)
	for i := range data {
		r := 0.5
		if i%2 == 1 {
			r = 2
		}
		data[i] = []float64{r, r} // ‖y‖²/d = r²
	}
	ctx := tinyStore()
	ctx.SetParams(map[string]any{ParamWidth: 32, ParamLearningRate: 5e-3, ParamCosineSteps: 2000, ParamEMADecay: 0.0, ParamClipNorm: 0.0, ParamBatchSize: 64})
	tr, err := NewTrainer(MustNewTrainBackend(), ctx, schedule.DefaultVP(), DFTM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := tr.TrainSteps(1)
	last, err := tr.TrainSteps(2000)
	if err != nil {
		t.Fatal(err)
	}
	s := schedule.DefaultVP()
	a, sg := s.Alpha(0.05), s.Sigma(0.05)
	out := model.MustExecOnce(tr.Backend, ctx, func(ctx *model.Scope, x, al, si *graph.Node) *graph.Node {
		return TraceNet(ctx, Inputs{X: x, Alpha: al, Sigma: si})
	}, [][]float32{{float32(a * 0.5), float32(a * 0.5)}, {float32(a * 2), float32(a * 2)}},
		[]float32{float32(a), float32(a)}, []float32{float32(sg), float32(sg)})
	got := tensors.MustCopyFlatData[float32](out)
	t.Logf("loss %g → %g; t_θ = %v, want [0.25 4]", first, last, got)
	// The optimum is [0.25, 4]; a 2 000-step tiny network gets ≈ [0.22, 4.08].
	if math.Abs(float64(got[0])-0.25) > 0.15 || math.Abs(float64(got[1])-4) > 0.3 {
		t.Errorf("t_θ = %v, want ≈ [0.25, 4]; loss %g → %g", got, first, last)
	}
}
