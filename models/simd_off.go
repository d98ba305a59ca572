//go:build !goexperiment.simd

package models

import "os"

// warnWithoutSIMD says once, when the first backend is created, that this
// binary lacks the Go backend's SIMD matrix kernels.
func warnWithoutSIMD() {
	os.Stderr.WriteString("dfx: built without GOEXPERIMENT=simd: GoMLX's Go backend runs without its AVX2/AVX-512 " +
		"kernels, 7-11x slower (rebuild with GOEXPERIMENT=simd)\n")
}
