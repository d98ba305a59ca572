package models

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// tinyData is a 2-D mixture of four points with small jitter.
func tinyData(n int, seed uint64) ([][]float64, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := [][]float64{{1, 1}, {-1, 1}, {-1, -1}, {1, -1}}
	data, labels := make([][]float64, n), make([]int, n)
	for i := range data {
		c := rng.IntN(4)
		data[i] = []float64{centres[c][0] + 0.05*rng.NormFloat64(), centres[c][1] + 0.05*rng.NormFloat64()}
		labels[i] = c
	}
	return data, labels
}

func tinyStore() *model.Store {
	ctx := NewStore()
	ctx.SetParams(map[string]any{ParamWidth: 16, ParamDepth: 1, ParamEmbedDim: 8, ParamBatchSize: 32, ParamLearningRate: 3e-3})
	return ctx
}

// weights returns every variable's raw bytes by scope and name.
func weights(t *testing.T, ctx *model.Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for v := range ctx.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") { // GoMLX names them with a random UUID
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		if err := val.ConstBytes(func(b []byte) { out[v.Path()] = append([]byte(nil), b...) }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestDSMTrainingLowersTheLoss(t *testing.T) {
	data, labels := tinyData(256, 1)
	for _, p := range []string{"eps", "y", "v"} {
		ctx := tinyStore()
		ctx.SetParams(map[string]any{ParamParam: p, ParamNumClasses: 4, ParamWeighting: "min-snr"})
		tr, err := NewTrainer(MustNewTrainBackend(), ctx, schedule.DefaultVP(), DSM, data, labels)
		if err != nil {
			t.Fatal(err)
		}
		first, err := tr.TrainSteps(1)
		if err != nil {
			t.Fatal(err)
		}
		var last float64
		for range 5 { // average out batch noise
			l, err := tr.TrainSteps(40)
			if err != nil {
				t.Fatal(err)
			}
			last += l / 5
		}
		if !(last < first) {
			t.Errorf("%s: loss went from %g to %g", p, first, last)
		}
	}
}

func TestFixedSeedGivesIdenticalWeights(t *testing.T) {
	data, _ := tinyData(64, 2)
	run := func() map[string][]byte {
		tr, err := NewTrainer(MustNewTrainBackend(), tinyStore(), schedule.DefaultVE(), DSM, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.TrainSteps(5); err != nil {
			t.Fatal(err)
		}
		return weights(t, tr.Store)
	}
	a, b := run(), run()
	if len(a) == 0 {
		t.Fatal("no variables")
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			t.Fatalf("variable %s differs between two runs with the same seed", k)
		}
	}
}

func TestLearningRateWarmsUpThenDecaysToZero(t *testing.T) {
	ctx := NewStore()
	ctx.SetParams(map[string]any{ParamLearningRate: 1.0, ParamWarmupSteps: 10, ParamCosineSteps: 100})
	if lr := LearningRate(ctx, 0); math.Abs(lr-0.1) > 1e-12 {
		t.Errorf("step 0: %g, want 0.1", lr)
	}
	if lr := LearningRate(ctx, 10); math.Abs(lr-1) > 1e-12 {
		t.Errorf("step 10: %g, want 1", lr)
	}
	if lr := LearningRate(ctx, 110); math.Abs(lr) > 1e-12 {
		t.Errorf("step 110: %g, want 0", lr)
	}
}

func TestZeroLearningRateLeavesTrainableWeightsUnchanged(t *testing.T) {
	data, _ := tinyData(64, 4)
	ctx := tinyStore()
	ctx.SetParams(map[string]any{ParamLearningRate: 0.0, ParamWeightDecay: 0.1})
	tr, err := NewTrainer(MustNewTrainBackend(), ctx, schedule.DefaultVP(), DSM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TrainSteps(1); err != nil {
		t.Fatal(err)
	}
	before := weights(t, ctx)
	if _, err := tr.TrainSteps(3); err != nil {
		t.Fatal(err)
	}
	after := weights(t, ctx)
	for v := range ctx.IterVariables() {
		if v.Trainable && !slices.Equal(before[v.Path()], after[v.Path()]) {
			t.Errorf("%s changed with learning rate 0", v.Path())
		}
	}
}

func TestRunTrainsToItsStepWithCurveAndHooks(t *testing.T) {
	data, _ := tinyData(32, 6)
	tr, err := NewTrainer(MustNewTrainBackend(), tinyStore(), schedule.DefaultVP(), DSM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	var steps, every3, ends []int64
	var curve LossCurve
	hooks := []Hook{
		{Every: 1, Run: func(s LoopState) error { steps = append(steps, s.Step); return nil }},
		{Every: 3, Run: func(s LoopState) error { every3 = append(every3, s.Step); return nil }},
		{AtEnd: true, Run: func(s LoopState) error { ends = append(ends, s.Step); return nil }},
	}
	st, err := tr.Run(context.Background(), Loop{To: 7, Progress: &log, Curve: &curve, CurveEvery: 3, Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Step() != 7 || st.Step != 7 || st.Train <= 0 || !slices.Equal(steps, []int64{1, 2, 3, 4, 5, 6, 7}) || !strings.Contains(log.String(), "step 7/7") {
		t.Errorf("step %d (state %+v), steps seen %v, progress:\n%s", tr.Step(), st, steps, log.String())
	}
	if !slices.Equal(every3, []int64{3, 6}) || !slices.Equal(ends, []int64{7}) {
		t.Errorf("hooks every 3 at %v, at the end at %v", every3, ends)
	}
	if !slices.Equal(curve.Step, []int64{3, 6, 7}) || len(curve.Loss) != 3 {
		t.Errorf("curve %+v, want points at 3, 6 and the last step 7", curve)
	}
	if st, err := tr.Run(context.Background(), Loop{To: 10}); err != nil || tr.Step() != 10 || st.Step != 10 {
		t.Errorf("second Run: step %d, err %v; want 10", tr.Step(), err)
	}
	if st, err := tr.Run(context.Background(), Loop{To: 5}); err != nil || tr.Step() != 10 || !math.IsNaN(st.Loss) {
		t.Errorf("Run to a step already passed trained: step %d, %+v, %v", tr.Step(), st, err)
	}
	if gs := tr.GoMLX.GlobalStep(); gs != 10 {
		t.Errorf("GoMLX global step %d, want 10", gs)
	}
}

// One Run to step 6 and two Runs (to 2, then to 6) give the same weights:
// a resumed loop is the same loop.
func TestRunInPiecesEqualsOneRun(t *testing.T) {
	data, _ := tinyData(32, 6)
	trained := func(tos ...int64) map[string][]byte {
		tr, err := NewTrainer(MustNewTrainBackend(), tinyStore(), schedule.DefaultVP(), DSM, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, to := range tos {
			if _, err := tr.Run(context.Background(), Loop{To: to}); err != nil {
				t.Fatal(err)
			}
		}
		return weights(t, tr.Store)
	}
	a, b := trained(6), trained(2, 6)
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			t.Errorf("%s differs between one Run and two", k)
		}
	}
}

func TestRunStopsWhenCancelledOrAHookFails(t *testing.T) {
	data, _ := tinyData(32, 6)
	tr, err := NewTrainer(MustNewTrainBackend(), tinyStore(), schedule.DefaultVP(), DSM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stop := Hook{Every: 1, Run: func(s LoopState) error {
		if s.Step == 3 {
			cancel()
		}
		return nil
	}}
	if _, err = tr.Run(ctx, Loop{To: 1000, Hooks: []Hook{stop}}); !errors.Is(err, context.Canceled) || tr.Step() != 3 {
		t.Errorf("err %v at step %d, want context.Canceled at step 3", err, tr.Step())
	}
	boom := errors.New("boom")
	fail := Hook{Every: 2, Run: func(LoopState) error { return boom }}
	if _, err = tr.Run(context.Background(), Loop{To: 1000, Hooks: []Hook{fail}}); !errors.Is(err, boom) || tr.Step() != 4 {
		t.Errorf("err %v at step %d, want the hook's error at step 4", err, tr.Step())
	}
}

func TestLogSigmaTimeSamplingSpreadsLogSigmaUniformly(t *testing.T) {
	data, _ := tinyData(16, 7)
	ctx := tinyStore()
	ctx.SetParam(ParamTimeSampling, "log-sigma")
	s := schedule.DefaultEDM()
	tr, err := NewTrainer(MustNewTrainBackend(), ctx, s, DSM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Log(s.Sigma(s.TMin)), math.Log(s.Sigma(s.TMax))
	var below int
	const n = 4000
	for range n {
		if math.Log(s.Sigma(tr.sampleTime(s.TMin, s.TMax, "log-sigma"))) < (lo+hi)/2 {
			below++
		}
	}
	if frac := float64(below) / n; math.Abs(frac-0.5) > 0.03 {
		t.Errorf("fraction of log σ below the midpoint %g, want 0.5", frac)
	}
	// log-snr on VP: log(σ/α) uniform between its ends.
	ctx.SetParam(ParamTimeSampling, "log-snr")
	vp := schedule.DefaultVP()
	if tr, err = NewTrainer(MustNewTrainBackend(), ctx, vp, DSM, data, nil); err != nil {
		t.Fatal(err)
	}
	l := func(t float64) float64 { return math.Log(vp.Sigma(t) / vp.Alpha(t)) }
	for _, q := range []float64{0.25, 0.5, 0.75} {
		cut := l(vp.TMin) + q*(l(vp.TMax)-l(vp.TMin))
		below = 0
		for range n {
			if l(tr.sampleTime(vp.TMin, vp.TMax, "log-snr")) < cut {
				below++
			}
		}
		if frac := float64(below) / n; math.Abs(frac-q) > 0.03 {
			t.Errorf("log-snr: fraction of log(σ/α) below its %g quantile %g", q, frac)
		}
	}
	ctx.SetParam(ParamTimeSampling, "bogus")
	if _, err := NewTrainer(MustNewTrainBackend(), ctx, s, DSM, data, nil); err == nil {
		t.Error("unknown time_sampling accepted")
	}
}
