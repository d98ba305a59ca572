//go:build !amd64 || noasm

package gemm

// Available is false where there is no assembly micro-kernel.
var Available = false

func kernel8x24(kc int, a, b, c *float64, ldc int, add bool) {
	panic("gemm: no GEMM micro-kernel on this platform")
}
