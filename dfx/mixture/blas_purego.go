//go:build !(cgo && openblas)

package mixture

import "github.com/dfx-lab/dfx/dfx/mixture/internal/gemm"

// By default (with or without cgo) the products run on the package's own
// blocked GEMM when the CPU has AVX-512: on 2 cores of an AVX-512 Xeon it
// measured 125–150 GFLOP/s in float64 on the mixture's X[256,784]·Ycᵀ[784,4096]
// blocks, against 15–19 for gonum's pure-Go Gemm, 40 for GoMLX v0.28.8's Go
// backend (GOEXPERIMENT=simd, ops_sequential) and 145–178 for NumPy/OpenBLAS.
func init() {
	if gemm.Available {
		gemmFn = gemm.Gemm
		blasName = "pure Go, AVX-512 assembly micro-kernel (dfx)"
	}
}
