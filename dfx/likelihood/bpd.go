package likelihood

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Quantization describes discrete data: integer codes k ∈ {0, …, Levels−1}
// per dimension shown to the model as x = Lo + (Hi − Lo)·(k + u)/Levels,
// u ∈ [0, 1) (uniform dequantisation, Theis et al. 2016). 8-bit images in
// [−1, 1] are {Levels: 256, Lo: −1, Hi: 1}; in [0, 1], {256, 0, 1}.
type Quantization struct {
	Levels int
	Lo, Hi float64
}

// Check reports a quantization that cannot be used.
func (q Quantization) Check() error {
	if q.Levels < 2 || !(q.Hi > q.Lo) || math.IsInf(q.Hi-q.Lo, 0) {
		return fmt.Errorf("likelihood: quantization needs ≥ 2 levels and Lo < Hi, got %+v: %w", q, ErrInput)
	}
	return nil
}

// Dequantize maps integer codes [B, d] to continuous points with uniform
// noise from rng; codes outside {0, …, Levels−1} are an error.
func (q Quantization) Dequantize(codes *mat.Dense, rng *rand.Rand) (*mat.Dense, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	b, d := codes.Dims()
	out := mat.NewDense(b, d, nil)
	scale := (q.Hi - q.Lo) / float64(q.Levels)
	for i := 0; i < b; i++ {
		for j := 0; j < d; j++ {
			k := codes.At(i, j)
			if k != math.Trunc(k) || k < 0 || k >= float64(q.Levels) {
				return nil, fmt.Errorf("likelihood: code %v at (%d, %d) outside {0, …, %d}: %w", k, i, j, q.Levels-1, ErrInput)
			}
			out.Set(i, j, q.Lo+scale*(k+rng.Float64()))
		}
	}
	return out, nil
}

// Offset is the bits per dimension added to −log₂ p(x)/d to turn the density
// of dequantised data into the probability of the discrete codes:
// P(k) ≈ p(x)·((Hi−Lo)/Levels)^d, so bpd = −log₂ p(x)/d + log₂ Levels − log₂(Hi−Lo).
// It is 7 for 8-bit data in [−1, 1] and 8 for 8-bit data in [0, 1].
func (q Quantization) Offset() float64 {
	return math.Log2(float64(q.Levels)) - math.Log2(q.Hi-q.Lo)
}

// BitsPerDim converts log-densities (nats) of d-dimensional points to bits
// per dimension: −log p/(d ln 2), plus q.Offset() when q is not nil.
func BitsPerDim(logProb []float64, d int, q *Quantization) ([]float64, error) {
	if d < 1 {
		return nil, fmt.Errorf("likelihood: dimension %d: %w", d, ErrInput)
	}
	off := 0.0
	if q != nil {
		if err := q.Check(); err != nil {
			return nil, err
		}
		off = q.Offset()
	}
	out := make([]float64, len(logProb))
	for i, lp := range logProb {
		out[i] = -lp/(float64(d)*math.Ln2) + off
	}
	return out, nil
}
