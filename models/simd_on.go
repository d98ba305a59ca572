//go:build goexperiment.simd

package models

// warnWithoutSIMD has nothing to say in a build with GOEXPERIMENT=simd.
func warnWithoutSIMD() {}
