package mnist

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// TestValidationELBO: a skip network whose residual is zero gains nothing
// over its skip; shifting the residual's output by a constant b in every
// pixel raises E‖ε − ε̂‖² by d b² (plus a cross term with the skip's mean
// error), so the gain is ≈ −½(λ_max − λ_min) b²/ln 2 bits per dimension:
// this fails if the span, the averaging over levels or the units are wrong.
func TestValidationELBO(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a mixture to the MNIST training set")
	}
	g, err := FitMixture(mixture.FitOptions{Components: 1, PerClass: true, Rank: 8, Shrink: 0.2, Idle: 1e-4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamParam: "eps", models.ParamArch: models.ArchFiLM, models.ParamWidth: 16, models.ParamDepth: 1,
		models.ParamEmbedDim: 8, models.ParamZeroBias: true})
	if err := models.SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	zero, err := ValidationELBO(backend, store)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(zero.Gain) > 1e-4 || !(zero.Term > 1 && zero.Term < 20) || len(zero.LevelGain) != valELBOLevels {
		t.Fatalf("zero residual: gain %g ± %g, term %g, %d levels", zero.Gain, zero.GainSE, zero.Term, len(zero.LevelGain))
	}
	// Materialise the variables in store itself (ValidationELBO works on a copy).
	net, err := models.NewAccessNet(backend, store, Schedule(), false)
	if err != nil {
		t.Fatal(err)
	}
	co, _ := schedule.At(Schedule(), 0.5)
	if _, err := net.EpsAt(co, mat.NewDense(1, Dim, nil)); err != nil {
		t.Fatal(err)
	}
	const b = 0.1
	v := store.GetVariable("/" + models.ScoreScope + "/output/biases")
	if v == nil {
		t.Fatal("no output bias")
	}
	bias := make([]float32, Dim)
	for i := range bias {
		bias[i] = b
	}
	if err := v.SetValue(tensors.FromFlatDataAndDimensions(bias, 1, Dim)); err != nil {
		t.Fatal(err)
	}
	shifted, err := ValidationELBO(backend, store)
	if err != nil {
		t.Fatal(err)
	}
	s := Schedule()
	tMin, tMax := s.Interval()
	span := 2*math.Log(s.Alpha(tMin)/s.Sigma(tMin)) - 2*math.Log(s.Alpha(tMax)/s.Sigma(tMax))
	want := -0.5 * span * b * b / math.Ln2
	if math.Abs(shifted.Gain-want) > 0.1*math.Abs(want) {
		t.Errorf("residual + %g: gain %g ± %g bpd, want ≈ %g", b, shifted.Gain, shifted.GainSE, want)
	}
	sum := 0.0
	for _, l := range shifted.LevelGain {
		sum += l
	}
	if math.Abs(sum-shifted.Gain) > 1e-9*math.Abs(want) {
		t.Errorf("levels sum to %g, gain %g", sum, shifted.Gain)
	}
}
