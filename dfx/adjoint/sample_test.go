package adjoint

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// twoBlobs is a 2-component Gaussian mixture in d = 4 with means
// ±(1.5, 1, 0, 0.5), full random covariances 0.05 I + A Aᵀ and weights
// 0.7 / 0.3, guided toward the rarer component's mean by ‖x₀ − μ₂‖²/2.
func twoBlobs(t *testing.T) Guide {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 3))
	means := mat.NewDense(2, 4, []float64{1.5, 1, 0, 0.5, -1.5, -1, 0, -0.5})
	var covs []*mat.SymDense
	for range 2 {
		cov := mat.NewSymDense(4, nil)
		cov.SymOuterK(1, randDense(rng, 4, 4, 0.25))
		for i := range 4 {
			cov.SetSym(i, i, cov.At(i, i)+0.05)
		}
		covs = append(covs, cov)
	}
	m, err := mixture.NewGaussian(means, covs, []float64{0.7, 0.3})
	if err != nil {
		t.Fatal(err)
	}
	return Guide{Schedule: schedule.DefaultVP(), Model: score.Exact{Mixture: m}, Operator: score.Exact{Mixture: m}, Loss: SquaredDistance(mat.Row(nil, 1, means))}
}

func meanLoss(t *testing.T, l Loss, x *mat.Dense) float64 {
	t.Helper()
	v, _, err := l(x)
	if err != nil {
		t.Fatal(err)
	}
	return floats.Sum(v) / float64(len(v))
}

// TestGuidedSamplingLowersTheLoss checks that guidance with the exact
// Fisher toward the rarer component of a 2-component mixture lowers the
// mean loss of the final samples against unguided DDIM from the same noise
// (by at least 20%), and, for the exact and DF-EA operators, that Strength
// 0 reproduces the unguided samples bit for bit and the step statistics
// count what was done.
func TestGuidedSamplingLowersTheLoss(t *testing.T) {
	g := twoBlobs(t)
	const b, d = 128, 4
	xT := schedule.SamplePrior(schedule.Prior(g.Schedule), b, d, rand.New(rand.NewPCG(1, 2)))
	ctx := context.Background()
	plain, err := g.Sample(ctx, xT, Config{Steps: 20})
	if err != nil {
		t.Fatal(err)
	}
	base := meanLoss(t, g.Loss, plain.X)
	if plain.ModelEvals != 20 || plain.OperatorCalls != 0 {
		t.Errorf("unguided: %d model evaluations, %d operator calls", plain.ModelEvals, plain.OperatorCalls)
	}
	cfg := Config{Steps: 20, From: 4, To: 16, InnerSteps: 5, Strength: 0.2, Normalize: true}
	for _, op := range []score.FisherOperator{g.Operator, access.DFEA{}} {
		gg := g
		gg.Operator = op
		zero := cfg
		zero.Strength = 0
		r0, err := gg.Sample(ctx, xT, zero)
		if err != nil {
			t.Fatal(err)
		}
		if !mat.Equal(r0.X, plain.X) {
			t.Errorf("%s: Strength 0 changed the samples", op.Name())
		}
		r, err := gg.Sample(ctx, xT, cfg)
		if err != nil {
			t.Fatal(err)
		}
		guided := meanLoss(t, g.Loss, r.X)
		t.Logf("%s: mean loss unguided %.3f, guided %.3f", op.Name(), base, guided)
		// Only the exact Fisher is required to help: DF-EA's endpoint
		// approximation is far from F at the late inner states of these
		// toys (see the package report), and is only logged.
		if op.Name() == "exact" && !(guided < 0.8*base) {
			t.Errorf("%s: guidance did not lower the loss: unguided %.4f, guided %.4f", op.Name(), base, guided)
		}
		if want := 20 + 12*5; r.ModelEvals != want || r.OperatorCalls != 12*5 {
			t.Errorf("%s: %d model evaluations (want %d), %d operator calls (want 60)", op.Name(), r.ModelEvals, want, r.OperatorCalls)
		}
		for _, st := range r.Steps {
			inWindow := st.Step >= 4 && st.Step < 16
			if st.Guided != inWindow || inWindow == math.IsNaN(st.Loss) {
				t.Errorf("%s: step %d guided=%v loss=%g", op.Name(), st.Step, st.Guided, st.Loss)
			}
		}
	}
}

// TestSampleStopsOnCancel checks that a cancelled context stops the run.
func TestSampleStopsOnCancel(t *testing.T) {
	g := twoBlobs(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Sample(ctx, mat.NewDense(2, 4, nil), Config{Steps: 5})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run returned %v", err)
	}
}

// TestObserveSeesEachGuidedStateBeforeItsUpdate: Observe is called once per
// guided step, in order, with the state the gradient was taken at (its
// Gradient recomputed from that state agrees), and an observer's error
// stops the run.
func TestObserveSeesEachGuidedStateBeforeItsUpdate(t *testing.T) {
	g := twoBlobs(t)
	xT := schedule.SamplePrior(schedule.Prior(g.Schedule), 8, 4, rand.New(rand.NewPCG(5, 6)))
	var steps []int
	cfg := Config{Steps: 10, From: 3, To: 7, InnerSteps: 2, Strength: 0.3, Normalize: true}
	cfg.Observe = func(k int, at schedule.Coefficients, x *mat.Dense, gr *GradientResult) error {
		steps = append(steps, k)
		again, err := g.Gradient(x, at.T, cfg.InnerSteps)
		if err != nil {
			return err
		}
		if !mat.EqualApprox(again.Grad, gr.Grad, 1e-12) {
			t.Errorf("step %d: the observed gradient is not the gradient at the observed state", k)
		}
		return nil
	}
	if _, err := g.Sample(context.Background(), xT, cfg); err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 4, 5, 6}; !slices.Equal(steps, want) {
		t.Errorf("observed steps %v, want %v", steps, want)
	}
	stop := errors.New("stop")
	cfg.Observe = func(int, schedule.Coefficients, *mat.Dense, *GradientResult) error { return stop }
	if _, err := g.Sample(context.Background(), xT, cfg); !errors.Is(err, stop) {
		t.Errorf("observer error: got %v", err)
	}
}
