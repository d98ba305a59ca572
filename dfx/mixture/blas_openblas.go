//go:build openblas && cgo

package mixture

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

// With -tags openblas every blas64 call in the process (ours and gonum's
// mat) goes to OpenBLAS through gonum's netlib binding.
func init() {
	blas64.Use(netlib.Implementation{})
	blasName = "OpenBLAS (cgo, gonum/netlib)"
}
