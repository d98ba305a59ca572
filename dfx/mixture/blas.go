package mixture

import "gonum.org/v1/gonum/blas/blas64"

// The blocked products of Dirac.Eval (G = X·Ycᵀ, Acc += E·Yc) go through
// gemmFn, chosen at build time:
//
//   - default (cgo or not): the pure-Go blocked GEMM with an AVX-512 assembly
//     micro-kernel (internal/gemm) where the CPU has AVX-512, gonum's pure-Go
//     Gemm elsewhere or with -tags noasm (blas_purego.go);
//   - -tags openblas with cgo: OpenBLAS's cblas_dgemm (blas_openblas.go),
//     needs libopenblas-dev (`make setup`). Slower here; kept to compare.
var (
	gemmFn   = blas64.Gemm
	blasName = "gonum (pure Go)"
)

// BLASName says which matrix-product path the blocked products of
// Dirac.Eval run on in this build and on this CPU.
func BLASName() string { return blasName }
