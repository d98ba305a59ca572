// Package tensormat moves host batches between gonum matrices and GoMLX
// tensors, written once for every package that runs a graph on *mat.Dense
// data: a [R, d] matrix to a float32 or float64 tensor, a constant vector,
// and a tensor's values back as float64.
package tensormat

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"
)

// FromMatrix is the [R, d] tensor of dtype (Float32 or Float64) holding m.
func FromMatrix(dtype dtypes.DType, m mat.Matrix) *tensors.Tensor {
	r, d := m.Dims()
	if dtype == dtypes.Float64 {
		flat := make([]float64, 0, r*d)
		for i := range r {
			flat = append(flat, Row(m, i)...)
		}
		return tensors.FromFlatDataAndDimensions(flat, r, d)
	}
	flat := make([]float32, 0, r*d)
	for i := range r {
		for _, x := range Row(m, i) {
			flat = append(flat, float32(x))
		}
	}
	return tensors.FromFlatDataAndDimensions(flat, r, d)
}

// FromFlat is the tensor of dtype (Float32 or Float64) and dimensions dims
// holding the row-major values v (copied).
func FromFlat(dtype dtypes.DType, v []float64, dims ...int) *tensors.Tensor {
	if dtype == dtypes.Float64 {
		return tensors.FromFlatDataAndDimensions(append([]float64(nil), v...), dims...)
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensors.FromFlatDataAndDimensions(f, dims...)
}

// Row is row i of m, without a copy where m is a *mat.Dense.
func Row(m mat.Matrix, i int) []float64 {
	if d, ok := m.(*mat.Dense); ok {
		_, c := d.Dims()
		return d.RawRowView(i)[:c]
	}
	return mat.Row(nil, i, m)
}

// Filled is the [n] tensor of dtype (Float32 or Float64) holding value.
func Filled(dtype dtypes.DType, n int, value float64) *tensors.Tensor {
	if dtype == dtypes.Float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = value
		}
		return tensors.FromFlatDataAndDimensions(v, n)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(value)
	}
	return tensors.FromFlatDataAndDimensions(v, n)
}

// Float32s is the [n] float32 tensor of the values v.
func Float32s(v []float64) *tensors.Tensor {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return tensors.FromFlatDataAndDimensions(out, len(v))
}

// Values reads a float32 or float64 tensor's values as float64 and frees
// the tensor.
func Values(t *tensors.Tensor) []float64 {
	defer t.MustFinalizeAll()
	return Copy(t)
}

// Copy reads a float32 or float64 tensor's values as float64, leaving the
// tensor to its owner.
func Copy(t *tensors.Tensor) []float64 {
	switch t.DType() {
	case dtypes.Float64:
		return tensors.MustCopyFlatData[float64](t)
	case dtypes.Float32:
		f := tensors.MustCopyFlatData[float32](t)
		out := make([]float64, len(f))
		for i, x := range f {
			out[i] = float64(x)
		}
		return out
	}
	panic(fmt.Sprintf("tensormat: unexpected dtype %s", t.DType()))
}

// Dense is the [r, d] matrix of a tensor's values (Values), freeing the
// tensor.
func Dense(t *tensors.Tensor, r, d int) *mat.Dense { return mat.NewDense(r, d, Values(t)) }

// Rows is the matrix [len(rows), d] whose rows are copies of rows (each of
// d = len(rows[0]) values).
func Rows(rows [][]float64) *mat.Dense {
	m := mat.NewDense(len(rows), len(rows[0]), nil)
	for i, r := range rows {
		m.SetRow(i, r)
	}
	return m
}
