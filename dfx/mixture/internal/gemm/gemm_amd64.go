//go:build amd64 && !noasm

package gemm

import "golang.org/x/sys/cpu"

// Available says whether the micro-kernel runs here: it needs AVX-512F (and
// an OS that saves its state).
var Available = cpu.X86.HasAVX512F

// kernel8x24 sets (add = false) or adds to (add = true) C[0:8, 0:24], row
// stride ldc, the product of a packed 8×kc slice of A and kc×24 slice of B.
//
//go:noescape
func kernel8x24(kc int, a, b, c *float64, ldc int, add bool)
