package mnist

import (
	"context"
	"io"
	"math"
	"testing"
)

// TestModelEvalQuick: the quick evaluation of the committed ε-network gives
// a finite test bpd in the range the README states for it (≈ 7.3), a
// solver error, and samples measured against the requested digits.
func TestModelEvalQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the committed networks (≈ 15 s)")
	}
	res, err := RunModelEval(context.Background(), ModelEvalQuick("", "eps"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.BPD) != 4 || len(res.Coarse) != 4 || res.Mixture != nil {
		t.Fatalf("%d bpd, %d coarse, mixture %v", len(res.BPD), len(res.Coarse), res.Mixture)
	}
	for _, b := range res.BPD {
		if !(b > 6 && b < 8.5) {
			t.Errorf("committed ε-network: %g bpd, want ≈ 7.3", b)
		}
	}
	if len(res.Quality) != 1 || math.IsNaN(res.Quality[0].Q.ClassifierAgree) || res.Quality[0].Q.N != 20 {
		t.Errorf("quality %+v", res.Quality)
	}
	if _, err := res.Report(); err != nil {
		t.Fatal(err)
	}
}
