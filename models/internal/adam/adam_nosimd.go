//go:build !(goexperiment.simd && amd64)

package adam

// Fused32 is FusedGeneric on the cores in parallel (no SIMD build).
func Fused32(p, m, s, e, g []float32, hp Hyper) {
	parallelChunks(len(p), func(lo, hi int) { FusedGeneric(p[lo:hi], m[lo:hi], s[lo:hi], sub(e, lo, hi), g[lo:hi], hp) })
}

func SumSquares32(g []float32) float64 { return sumSquaresGeneric(g) }
