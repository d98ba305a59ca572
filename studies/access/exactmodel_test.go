package access

import (
	"context"
	"io"
	"testing"
)

// TestEstimatorsOnAnExactImageScaleModel: on a fitted mixture run as a
// d = 784 network, the exact VJP trace and VJP products match the mixture's
// exact Fisher to float32 rounding, Hutchinson-16 to its probe variance,
// and DF-TM fed the exact t* to the float32 denoiser's error.
func TestEstimatorsOnAnExactImageScaleModel(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a mixture to the MNIST training set")
	}
	res, err := RunExactModel(context.Background(), ExactModelQuick(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		t.Logf("t = %g: traces %v, products %v", row.T, row.TraceErr, row.MatVecErr)
		if e := row.TraceErr["vjp-exact"]; !(e < 1e-5) {
			t.Errorf("t = %g: exact VJP trace off the exact Fisher by %g", row.T, e)
		}
		if e := row.MatVecErr["vjp-matvec"]; !(e < 1e-4) {
			t.Errorf("t = %g: VJP product off F v by %g", row.T, e)
		}
		if e := row.TraceErr["hutchinson-16"]; !(e < 0.02) {
			t.Errorf("t = %g: Hutchinson-16 off by %g", row.T, e)
		}
		if e := row.TraceErr["df-tm (exact t*)"]; !(e < 1e-4) {
			t.Errorf("t = %g: DF-TM with the exact t* off by %g", row.T, e)
		}
	}
	if _, err := res.Report(); err != nil {
		t.Fatal(err)
	}
}
