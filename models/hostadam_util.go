package models

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func scalarShape(dtype dtypes.DType) shapes.Shape { return shapes.Make(dtype) }

// scalarTensor is a scalar of dtype (float32 or float64) holding x.
func scalarTensor(dtype dtypes.DType, x float64) *tensors.Tensor {
	if dtype == dtypes.Float32 {
		return tensors.FromValue(float32(x))
	}
	return tensors.FromValue(x)
}

// scalarVar reads a scalar variable of Go type T (0 when it has no value yet).
func scalarVar[T int64 | float32 | float64](v *model.Variable) (T, error) {
	if !v.HasValue() {
		return 0, nil
	}
	val, err := v.Value()
	if err != nil {
		return 0, err
	}
	x, ok := val.Value().(T)
	if !ok {
		return 0, fmt.Errorf("models: variable %s holds %T, want %T", v.Path(), val.Value(), *new(T))
	}
	return x, nil
}

// incrementScalar adds one to a float scalar variable and returns the new value.
func incrementScalar(v *model.Variable, dtype dtypes.DType) (float64, error) {
	var t float64
	switch dtype {
	case dtypes.Float32:
		x, err := scalarVar[float32](v)
		if err != nil {
			return 0, err
		}
		x++
		t = float64(x)
	default:
		x, err := scalarVar[float64](v)
		if err != nil {
			return 0, err
		}
		t = x + 1
	}
	return t, v.SetValue(scalarTensor(dtype, t))
}
