package problem

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Clip clamps images to the data range [−1, 1] (a copy).
func Clip(x *mat.Dense) *mat.Dense {
	out := mat.DenseCopyOf(x)
	raw := out.RawMatrix().Data
	for i, v := range raw {
		raw[i] = math.Max(-1, math.Min(1, v))
	}
	return out
}
