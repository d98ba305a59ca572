package model

import (
	"context"
	"io"
	"testing"
)

// TestAblationQuick: the quick ablation trains each variant and measures
// it against the same mixture: with the skip a barely trained network is
// the mixture (gain ≈ 0), without it the network is far worse.
func TestAblationQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a mixture to the MNIST training set")
	}
	res, err := RunAblation(context.Background(), AblationQuick(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(res.Rows[0].Curve) != 2 {
		t.Fatalf("%d rows, %d points", len(res.Rows), len(res.Rows[0].Curve))
	}
	with, without := res.Rows[0].Curve[1], res.Rows[1].Curve[1]
	if with.Gain < -0.01 || with.Gain > 0.01 {
		t.Errorf("skip network after 4 steps: gain %g over its own skip, want ≈ 0", with.Gain)
	}
	if without.Gain > -1 {
		t.Errorf("network without skip after 4 steps: gain %g over the mixture, want far below 0", without.Gain)
	}
	if _, err := res.Report(); err != nil {
		t.Fatal(err)
	}
}
