package models

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

func TestCentredDFTMTrainerNeedsAScoreNetwork(t *testing.T) {
	if _, err := NewTrainer(MustNewTrainBackend(), tinyStore(), schedule.DefaultVP(), DFTMCentred, [][]float64{{1, 0}, {0, 1}}, nil); err == nil {
		t.Error("centred DF-TM trainer accepted a context without a score network")
	}
}

// TestCentredDFTMNetworkLearnsTheScoreNetworksErrorAndLeavesItFrozen: ν_θ
// regresses ‖ε̂_θ − ε‖²/d, so its mean over x_t ~ q_t matches the frozen
// score network's mean DSM error at that t, and the score weights do not move.
func TestCentredDFTMNetworkLearnsTheScoreNetworksErrorAndLeavesItFrozen(t *testing.T) {
	y := [][]float64{{1, 1}, {-1, 1}, {-1, -1}, {1, -1}}
	data := make([][]float64, 64)
	for i := range data {
		data[i] = y[i%4]
	}
	ctx := tinyStore()
	ctx.SetParams(map[string]any{ParamEMADecay: 0.0, ParamClipNorm: 0.0, ParamBatchSize: 128})
	s := schedule.DefaultVP()
	backend := MustNewTrainBackend()
	score, err := NewTrainer(backend, ctx, s, DSM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := score.TrainSteps(150); err != nil {
		t.Fatal(err)
	}
	before := weights(t, ctx)
	nu, err := NewTrainer(backend, ctx, s, DFTMCentred, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nu.TrainSteps(800); err != nil {
		t.Fatal(err)
	}
	after, checked := weights(t, ctx), 0
	for k, v := range before {
		if !strings.HasPrefix(k, "/"+ScoreScope+"/") {
			continue
		}
		checked++
		if !bytes.Equal(v, after[k]) {
			t.Errorf("score variable %s changed while training ν_θ", k)
		}
	}
	if checked == 0 {
		t.Fatal("no score variables found")
	}
	const tm, b = 0.5, 1024
	a, sg := s.Alpha(tm), s.Sigma(tm)
	rng := rand.New(rand.NewPCG(3, 3))
	x, eps := make([][]float32, b), make([][]float64, b)
	al, si := make([]float32, b), make([]float32, b)
	for i := range x {
		c := y[i%4]
		eps[i] = []float64{rng.NormFloat64(), rng.NormFloat64()}
		x[i] = []float32{float32(a*c[0] + sg*eps[i][0]), float32(a*c[1] + sg*eps[i][1])}
		al[i], si[i] = float32(a), float32(sg)
	}
	outs := model.MustExecOnceN(backend, ctx, func(ctx *model.Scope, x, al, si *graph.Node) []*graph.Node {
		in := Inputs{X: x, Alpha: al, Sigma: si}
		return []*graph.Node{Eps(ctx, in), CentredTraceNet(ctx, in)}
	}, x, al, si)
	epsHat, nuOut := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
	var dsm, meanNu float64
	for i := range x {
		for j := range 2 {
			e := float64(epsHat[2*i+j]) - eps[i][j]
			dsm += e * e / 2 / b
		}
		meanNu += float64(nuOut[i]) / b
	}
	t.Logf("t = %g: mean ν_θ %.4g, mean ‖ε̂−ε‖²/d %.4g", tm, meanNu, dsm)
	if math.Abs(meanNu-dsm) > 0.25*dsm {
		t.Errorf("mean ν_θ = %.4g, want the score network's mean DSM error %.4g ± 25%%", meanNu, dsm)
	}
}
