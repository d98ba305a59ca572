//go:build !(goexperiment.simd && amd64)

package models

// adamFused32 is adamFusedGeneric on the cores in parallel (no SIMD build).
func adamFused32(p, m, s, e, g []float32, hp adamHyper) {
	parallelChunks(len(p), func(lo, hi int) { adamFusedGeneric(p[lo:hi], m[lo:hi], s[lo:hi], sub(e, lo, hi), g[lo:hi], hp) })
}

func sumSquares32(g []float32) float64 { return sumSquaresGeneric(g) }
