package mnist

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestFrameRMS: an empty frame is 0, a white one 1.
func TestFrameRMS(t *testing.T) {
	x := mat.NewDense(2, Dim, nil)
	for j := 0; j < Dim; j++ {
		x.Set(0, j, -1)
		x.Set(1, j, 1)
	}
	if v := FrameRMS(x.Slice(0, 1, 0, Dim).(*mat.Dense)); v != 0 {
		t.Errorf("black frame rms %g, want 0", v)
	}
	if v := FrameRMS(x.Slice(1, 2, 0, Dim).(*mat.Dense)); v != 1 {
		t.Errorf("white frame rms %g, want 1", v)
	}
}
