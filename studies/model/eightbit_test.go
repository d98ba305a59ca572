package model

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestEightBitIsThePixelGridOfTheStoredSamples: a sample is measured as it
// is stored, x ↦ round(127.5 (x + 1))/127.5 − 1 with pixels clipped to
// 0…255, so black is −1, white 1, and rounding twice changes nothing.
func TestEightBitIsThePixelGridOfTheStoredSamples(t *testing.T) {
	in := []float64{-1, 1, 0, 0.3, -0.77, 1.4, -3, 0.5 / 127.5}
	x := mat.NewDense(2, len(in)/2, in)
	got, err := eightBit(x)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range in {
		p := math.Round(math.Min(255, math.Max(0, 127.5*(v+1))))
		if want, g := p/127.5-1, got.RawMatrix().Data[i]; g != want {
			t.Errorf("eightBit(%g) = %g, want %g (pixel %g)", v, g, want, p)
		}
	}
	if g := got.RawMatrix().Data; g[0] != -1 || g[1] != 1 || g[5] != 1 || g[6] != -1 {
		t.Errorf("black, white and clipped pixels: %v", g)
	}
	again, err := eightBit(got)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(again, got) {
		t.Errorf("rounding twice moved a pixel: %v, then %v", got.RawMatrix().Data, again.RawMatrix().Data)
	}
}
