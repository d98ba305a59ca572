package adjoint

import (
	"context"
	"testing"

	"gonum.org/v1/gonum/mat"

	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestProblemNoiseIsMNISTNoise: the study's initial noise on mnist.Problem
// is mnist.InitialNoise bit for bit (the committed tables depend on it),
// for a run's first rows and for rows in the middle of a run.
func TestProblemNoiseIsMNISTNoise(t *testing.T) {
	p := mnist.Problem()
	for _, r := range [][2]int{{0, 3}, {2, 5}} {
		got, want := p.InitialNoise(7, r[0], r[1]), mnist.InitialNoise(7, r[0], r[1])
		if !mat.Equal(got, want) {
			t.Fatalf("rows %v: the problem's noise differs from mnist.InitialNoise", r)
		}
	}
}

// TestInterleavedDropsWarmUpAndTakesMedians: the warm-up round is not
// kept, and each quantity's median is over the kept rounds.
func TestInterleavedDropsWarmUpAndTakesMedians(t *testing.T) {
	calls := map[string]int{}
	seq := map[string][]float64{"a": {100, 3, 1, 2}, "b": {-50, 10, 30, 20, 40}}
	measure := map[string]func() ([]float64, error){}
	for name := range seq {
		measure[name] = func() ([]float64, error) {
			v := seq[name][calls[name]]
			calls[name]++
			return []float64{v, 2 * v}, nil
		}
	}
	med, err := interleaved(context.Background(), 3, []string{"a", "b"}, measure)
	if err != nil {
		t.Fatal(err)
	}
	if calls["a"] != 4 || calls["b"] != 4 {
		t.Errorf("calls %v, want 4 each (a warm-up and 3 rounds)", calls)
	}
	for name, want := range map[string][]float64{"a": {2, 4}, "b": {20, 40}} {
		if got := med[name]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: medians %v, want %v", name, got, want)
		}
	}
}

// TestClipToClampsImagesOnly: image samples are clamped to [−1, 1] in a
// copy; other samples are returned untouched.
func TestClipToClampsImagesOnly(t *testing.T) {
	x := mat.NewDense(1, 3, []float64{-2, 0.5, 1.5})
	if got := clipTo(x, true).RawRowView(0); got[0] != -1 || got[1] != 0.5 || got[2] != 1 {
		t.Errorf("clipped image %v, want [-1 0.5 1]", got)
	}
	if x.At(0, 0) != -2 {
		t.Error("clipTo changed its input")
	}
	if got := clipTo(x, false); got.At(0, 2) != 1.5 {
		t.Errorf("non-image sample clipped: %v", got.RawRowView(0))
	}
}

// TestExploreAdjointGuidesFromTheSameNoise: the notebook's guided run costs
// more network evaluations than the unguided one from the same noise, and
// scores every image.
func TestExploreAdjointGuidesFromTheSameNoise(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the committed networks")
	}
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	nets, err := mnist.LoadNetworks(backend, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := dfxadjoint.Config{Steps: 4, From: 1, To: 3, InnerSteps: 1, Strength: 0.3, Normalize: true}
	a, err := ExploreAdjoint(context.Background(), nets, 3, mnist.OperatorDFEA, cfg, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if a.EvalsG <= a.EvalsU || len(a.LossG) != 2 {
		t.Errorf("guided %d evaluations against %d unguided, losses %v", a.EvalsG, a.EvalsU, a.LossG)
	}
	if _, err := a.Report(); err != nil {
		t.Error(err)
	}
}
