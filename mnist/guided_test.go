package mnist

import (
	"context"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/internal/stats"
)

// TestGuidedSampleAtStrengthZeroIsSample: with Strength 0 the guided
// sampler takes the guided path (inner solve, loss, adjoint pass with either
// operator) but leaves every state unchanged, so its images are
// Networks.Sample's with the same seed, classes, scale and steps (to
// rounding: the two write the DDIM step in two algebraically equal forms); the statistics mark the window's steps as guided and count one
// operator call per inner step; rows [lo, hi) alone are the same rows (to
// float32 rounding).
func TestGuidedSampleAtStrengthZeroIsSample(t *testing.T) {
	nets := tinyNetworks(t)
	cls := []int{1, 4, 7}
	const scale, seed = 2.0, 5
	want, err := nets.Sample(SampleConfig{Steps: 4, Seed: seed}, cls, []float64{scale, scale, scale})
	if err != nil {
		t.Fatal(err)
	}
	cfg := adjoint.Config{Steps: 4, From: 1, To: 3, InnerSteps: 2, Strength: 0, Normalize: true}
	for _, op := range []string{OperatorVJP, OperatorDFEA} {
		res, err := GuidedSample(context.Background(), nets, cls, scale, CentringReward(), op, cfg, seed)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if d := stats.RelNorm(res.X.RawMatrix().Data, want.RawMatrix().Data); d > 1e-6 {
			t.Errorf("%s: strength 0 differs from Sample by %g", op, d)
		}
		if len(res.Steps) != 4 || res.OperatorCalls != 4 || res.ModelEvals != 8 {
			t.Fatalf("%s: %d steps, %d operator calls, %d model evaluations; want 4, 4, 8", op, len(res.Steps), res.OperatorCalls, res.ModelEvals)
		}
		for k, st := range res.Steps {
			inWindow := k >= 1 && k < 3
			if st.Guided != inWindow || inWindow == math.IsNaN(st.Loss) {
				t.Errorf("%s: step %d guided %v with loss %g", op, k, st.Guided, st.Loss)
			}
		}
		part, err := GuidedSampleRows(context.Background(), nets, cls, scale, CentringReward(), op, cfg, seed, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		// float32 network arithmetic depends on the batch size in the last bits
		sub := mat.DenseCopyOf(want.Slice(1, 3, 0, Dim))
		if d := stats.RelNorm(part.X.RawMatrix().Data, sub.RawMatrix().Data); d > 1e-5 {
			t.Errorf("%s: rows [1, 3) alone differ from the whole run's by %g", op, d)
		}
	}
}

// TestGuidedSampleMovesWithStrength: a positive strength changes the
// images (guidance is applied), differently for the two operators.
func TestGuidedSampleMovesWithStrength(t *testing.T) {
	nets := tinyNetworks(t)
	cls := []int{3, 8}
	cfg := adjoint.Config{Steps: 4, From: 1, To: 3, InnerSteps: 2, Strength: 0.5, Normalize: true}
	want, err := nets.Sample(SampleConfig{Steps: 4, Seed: 2}, cls, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []*mat.Dense
	for _, op := range []string{OperatorVJP, OperatorDFEA} {
		res, err := GuidedSample(context.Background(), nets, cls, 1, CentringReward(), op, cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		if d := stats.RelNorm(res.X.RawMatrix().Data, want.RawMatrix().Data); d < 1e-3 {
			t.Errorf("%s: strength 0.5 moved the images by only %g", op, d)
		}
		got = append(got, res.X)
	}
	if mat.Equal(got[0], got[1]) {
		t.Error("VJP and DF-EA gave the same images")
	}
}

// TestGuidedSampleRefusesBadInput: unknown operator names, classes outside
// 0…9 and bad row ranges are errors, before any sampling.
func TestGuidedSampleRefusesBadInput(t *testing.T) {
	nets := tinyNetworks(t)
	cfg := adjoint.Config{Steps: 2, From: 0, To: 1, InnerSteps: 1, Strength: 0.1}
	ctx := context.Background()
	for _, op := range []string{"", "exact", "df-eb", "VJP"} {
		if _, err := GuidedSample(ctx, nets, []int{1}, 1, CentringReward(), op, cfg, 1); err == nil || !strings.Contains(err.Error(), "unknown Fisher operator") {
			t.Errorf("operator %q: %v", op, err)
		}
	}
	if _, err := GuidedSample(ctx, nets, []int{1, 10}, 1, CentringReward(), OperatorDFEA, cfg, 1); err == nil {
		t.Error("class 10 accepted")
	}
	if _, err := GuidedSampleRows(ctx, nets, []int{1, 2}, 1, CentringReward(), OperatorDFEA, cfg, 1, 1, 3); err == nil {
		t.Error("rows [1, 3) of 2 accepted")
	}
	if _, err := GuidedSample(ctx, nets, []int{1}, 1, nil, OperatorDFEA, cfg, 1); err == nil {
		t.Error("a guidance window without a reward accepted")
	}
}
