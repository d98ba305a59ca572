package density

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Detail is the mean |difference| of the 7 neighbouring pairs of a 2 × 3
// image, in [0, 1] units, and InkMass its mean intensity: checked against
// a hand count (pixels −1, 1 alternating in the first row, all 1 in the
// second).
func TestDetailAndInkOfAHandCountedImage(t *testing.T) {
	x := mat.NewDense(1, 6, []float64{-1, 1, -1, 1, 1, 1})
	// Horizontal pairs: |1−0|, |0−1| in row 0; 0, 0 in row 1. Vertical: 1, 0, 1.
	if got, want := Detail(x, 2, 3)[0], 4.0/7; math.Abs(got-want) > 1e-15 {
		t.Errorf("detail %g, want %g", got, want)
	}
	if got, want := InkMass(x)[0], 4.0/6; math.Abs(got-want) > 1e-15 {
		t.Errorf("ink %g, want %g", got, want)
	}
}
