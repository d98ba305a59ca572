//go:build cgo && openblas

package mixture

// #cgo LDFLAGS: -lopenblas
// #if defined(__has_include)
// #if !__has_include(<openblas_config.h>) || !__has_include(<cblas.h>)
// #error "dfx/mixture: OpenBLAS is missing (no openblas_config.h / cblas.h). Install it with `make setup` (Debian: apt-get
// install libopenblas-dev), or build without -tags openblas (the default, pure-Go path)"
// #endif
// #endif
// #include <cblas.h>
//
// static void dfx_dgemm(int transA, int transB, int m, int n, int k, double alpha,
// 		const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc) {
// 	cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
// 		m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
// }
import "C"

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// With -tags openblas (and cgo) the products of Dirac.Eval call OpenBLAS's
// cblas_dgemm; the rest of gonum stays pure Go. Not the default: measured on a
// 2-core AVX-512 Xeon, Dirac.Eval at MNIST scale took 0.9–2 s per call this way
// against 0.45 s on the package's own kernel (internal/gemm) and 0.38 s for
// NumPy on the same OpenBLAS; the profile puts the extra time in the Go exp
// loop between the products (math.archExp 2.5–6.7 s of CPU against 0.2 s),
// with or without OpenBLAS's threads (OPENBLAS_NUM_THREADS=1), cause unknown.
func init() {
	gemmFn = openblasGemm
	blasName = "OpenBLAS (cgo, cblas_dgemm)"
}

// openblasGemm has blas64.Gemm's signature and checks.
func openblasGemm(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	m, k := a.Rows, a.Cols
	if tA != blas.NoTrans {
		m, k = k, m
	}
	n, kb := b.Cols, b.Rows
	if tB != blas.NoTrans {
		n, kb = kb, n
	}
	if kb != k || c.Rows != m || c.Cols != n {
		panic("mixture: openblasGemm: shape mismatch")
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 || len(a.Data) == 0 || len(b.Data) == 0 {
		blas64.Gemm(tA, tB, alpha, a, b, beta, c) // nothing for OpenBLAS to do; gonum scales C
		return
	}
	C.dfx_dgemm(cTrans(tA), cTrans(tB), C.int(m), C.int(n), C.int(k), C.double(alpha),
		(*C.double)(&a.Data[0]), C.int(a.Stride), (*C.double)(&b.Data[0]), C.int(b.Stride),
		C.double(beta), (*C.double)(&c.Data[0]), C.int(c.Stride))
}

func cTrans(t blas.Transpose) C.int {
	if t == blas.NoTrans {
		return 0
	}
	return 1
}
