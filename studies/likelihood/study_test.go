package likelihood

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/problem"
)

func TestThousandsGroupsDigitsByThree(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1 000", 60000: "60 000", 1234567: "1 234 567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

type fixedClassifier struct{ lp *mat.Dense }

func (c fixedClassifier) LogProbs(*mat.Dense) (*mat.Dense, error) { return c.lp, nil }

// TestClassScoresReadTheRequestedClass: log p(c|x) is the requested
// class's column, and a row counts as right when its most probable class
// (the first on ties) is the requested one.
func TestClassScoresReadTheRequestedClass(t *testing.T) {
	lp := mat.NewDense(3, 3, []float64{
		-0.1, -2, -3, // argmax 0
		-2, -0.5, -0.5, // tie between 1 and 2: 1
		-3, -2, -0.2, // argmax 2
	})
	got, acc, err := classScores(fixedClassifier{lp}, mat.NewDense(3, 1, nil), []int{0, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != -0.1 || got[1] != -0.5 || got[2] != -2 {
		t.Errorf("log p(c|x) = %v, want [-0.1 -0.5 -2]", got)
	}
	if acc != 1.0/3 {
		t.Errorf("accuracy %g, want 1/3 (only row 0 is right)", acc)
	}
}

// TestQuantizeLandsInTheCodesCell: a sample is rounded to the nearest of
// the Levels codes and dequantised within that code's cell of width
// 2/Levels; values outside [−1, 1] go to the end codes.
func TestQuantizeLandsInTheCodesCell(t *testing.T) {
	q := problem.ImageShape{H: 1, W: 5, C: 1, Levels: 256}.Quantization()
	x := mat.NewDense(1, 5, []float64{-1.5, -1, 0, 0.999, 2})
	codes := []float64{0, 0, 128, 255, 255} // round((x+1)/2·255), clamped
	got, err := quantize(x, &q, 1)
	if err != nil {
		t.Fatal(err)
	}
	for j, k := range codes {
		lo := 2*k/256 - 1
		if v := got.At(0, j); v < lo || v >= lo+2.0/256 || math.IsNaN(v) {
			t.Errorf("x = %g: %g is outside code %g's cell [%g, %g)", x.At(0, j), v, k, lo, lo+2.0/256)
		}
	}
}
