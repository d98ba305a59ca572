package likelihood

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestOffsetIsSevenBitsForEightBitDataInMinusOneOneAndEightInZeroOne(t *testing.T) {
	if o := (Quantization{256, -1, 1}).Offset(); o != 7 {
		t.Errorf("[−1, 1]: offset %g, want 7", o)
	}
	if o := (Quantization{256, 0, 1}).Offset(); o != 8 {
		t.Errorf("[0, 1]: offset %g, want 8", o)
	}
}

func TestUniformDensityOnTheCubeHasLog2LevelsBitsPerDim(t *testing.T) {
	// the uniform density on [−1, 1]^d is 2^−d: every code has probability 256^−d
	const d = 5
	q := Quantization{256, -1, 1}
	bpd, err := BitsPerDim([]float64{-d * math.Ln2}, d, &q)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(bpd[0]-8) > 1e-12 {
		t.Errorf("bpd %g, want 8", bpd[0])
	}
	cont, _ := BitsPerDim([]float64{-d * math.Ln2}, d, nil)
	if math.Abs(cont[0]-1) > 1e-12 {
		t.Errorf("continuous bpd %g, want 1", cont[0])
	}
}

func TestDequantizeStaysInsideEachCodesCell(t *testing.T) {
	q := Quantization{256, -1, 1}
	codes := mat.NewDense(2, 3, []float64{0, 255, 128, 7, 0, 255})
	x, err := q.Dequantize(codes, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			lo := -1 + 2*codes.At(i, j)/256
			if v := x.At(i, j); v < lo || v >= lo+2.0/256 {
				t.Errorf("(%d, %d): %g outside [%g, %g)", i, j, v, lo, lo+2.0/256)
			}
		}
	}
}

func TestDequantizeAndBitsPerDimRejectBadInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q := Quantization{256, -1, 1}
	for _, k := range []float64{-1, 256, 3.5} {
		if _, err := q.Dequantize(mat.NewDense(1, 1, []float64{k}), rng); !errors.Is(err, ErrInput) {
			t.Errorf("code %g: got %v", k, err)
		}
	}
	if _, err := (Quantization{1, 0, 1}).Dequantize(mat.NewDense(1, 1, nil), rng); !errors.Is(err, ErrInput) {
		t.Error("one level accepted")
	}
	if _, err := BitsPerDim([]float64{0}, 0, nil); !errors.Is(err, ErrInput) {
		t.Error("d = 0 accepted")
	}
	if _, err := BitsPerDim([]float64{0}, 2, &Quantization{256, 1, 1}); !errors.Is(err, ErrInput) {
		t.Error("Lo = Hi accepted")
	}
}
