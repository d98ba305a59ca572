package tensormat

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"gonum.org/v1/gonum/mat"
)

// TestMatrixRoundTrips: a matrix (a strided view included) goes to a
// tensor of either dtype and back unchanged up to the dtype's rounding,
// row-major; Filled and Float32s hold their values.
func TestMatrixRoundTrips(t *testing.T) {
	big := mat.NewDense(3, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.5})
	view := big.Slice(1, 3, 1, 3).(*mat.Dense) // [[6 7] [10 11]], stride 4
	for _, dt := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
		got := Dense(FromMatrix(dt, view), 2, 2)
		if !mat.Equal(got, view) {
			t.Errorf("%s: %v, want %v", dt, mat.Formatted(got), mat.Formatted(view))
		}
		if v := Values(Filled(dt, 3, 0.25)); len(v) != 3 || v[2] != 0.25 {
			t.Errorf("%s: Filled gives %v", dt, v)
		}
	}
	if v := Values(Float32s([]float64{1.5, -2})); v[0] != 1.5 || v[1] != -2 {
		t.Errorf("Float32s gives %v", v)
	}
	if r := Row(big.T(), 1); r[2] != 10 {
		t.Errorf("Row of a transpose: %v", r)
	}
}
