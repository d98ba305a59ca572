//go:build goexperiment.simd && amd64

package adam

import "simd/archsimd"

// Fused32 is FusedGeneric for float32 with AVX-512 (16 lanes), the
// remainder and CPUs without AVX-512 on the generic loop. The two cores
// split large variables.
func Fused32(p, m, s, e, g []float32, hp Hyper) {
	if !archsimd.X86.AVX512() {
		parallelChunks(len(p), func(lo, hi int) { FusedGeneric(p[lo:hi], m[lo:hi], s[lo:hi], sub(e, lo, hi), g[lo:hi], hp) })
		return
	}
	parallelChunks(len(p), func(lo, hi int) { adamAVX512(p[lo:hi], m[lo:hi], s[lo:hi], sub(e, lo, hi), g[lo:hi], hp) })
}

func adamAVX512(p, m, s, e, g []float32, hp Hyper) {
	scale := archsimd.BroadcastFloat32x16(float32(hp.Scale))
	b1 := archsimd.BroadcastFloat32x16(float32(hp.Beta1))
	b2 := archsimd.BroadcastFloat32x16(float32(hp.Beta2))
	ob1 := archsimd.BroadcastFloat32x16(1 - float32(hp.Beta1))
	ob2 := archsimd.BroadcastFloat32x16(1 - float32(hp.Beta2))
	lr := archsimd.BroadcastFloat32x16(float32(hp.LR))
	c1 := archsimd.BroadcastFloat32x16(float32(hp.C1))
	c2 := archsimd.BroadcastFloat32x16(float32(hp.C2))
	eps := archsimd.BroadcastFloat32x16(float32(hp.Eps))
	lrwd := archsimd.BroadcastFloat32x16(float32(hp.LR * max(hp.WD, 0)))
	d := archsimd.BroadcastFloat32x16(float32(hp.EMADecay))
	od := archsimd.BroadcastFloat32x16(1 - float32(hp.EMADecay))
	wd := hp.WD > 0 // GoMLX applies decay only when positive
	n := len(p) &^ 15
	for i := 0; i < n; i += 16 {
		gi := archsimd.LoadFloat32x16Slice(g[i:]).Mul(scale)
		mi := b1.Mul(archsimd.LoadFloat32x16Slice(m[i:])).Add(ob1.Mul(gi))
		si := b2.Mul(archsimd.LoadFloat32x16Slice(s[i:])).Add(ob2.Mul(gi.Mul(gi)))
		mi.StoreSlice(m[i:])
		si.StoreSlice(s[i:])
		stp := lr.Mul(mi.Mul(c1)).Div(si.Mul(c2).Sqrt().Add(eps))
		pi := archsimd.LoadFloat32x16Slice(p[i:])
		if wd {
			stp = stp.Add(lrwd.Mul(pi))
		}
		pi = pi.Sub(stp)
		pi.StoreSlice(p[i:])
		if e != nil {
			if hp.FirstEMA {
				pi.StoreSlice(e[i:])
			} else {
				d.Mul(archsimd.LoadFloat32x16Slice(e[i:])).Add(od.Mul(pi)).StoreSlice(e[i:])
			}
		}
	}
	if n < len(p) {
		FusedGeneric(p[n:], m[n:], s[n:], sub(e, n, len(p)), g[n:], hp)
	}
	archsimd.ClearAVXUpperBits() // the backend's scalar math.* code runs next
}

// SumSquares32 is Σ g² accumulated in float64 over float32 lanes of 16.
func SumSquares32(g []float32) float64 {
	if !archsimd.X86.AVX512() {
		return sumSquaresGeneric(g)
	}
	var total float64
	const block = 1 << 12 // float32 partial sums over short blocks, then float64
	for lo := 0; lo < len(g); lo += block {
		hi := min(lo+block, len(g))
		n := lo + (hi-lo)&^15
		acc := archsimd.BroadcastFloat32x16(0)
		for i := lo; i < n; i += 16 {
			v := archsimd.LoadFloat32x16Slice(g[i:])
			acc = v.MulAdd(v, acc)
		}
		var lanes [16]float32
		acc.StoreSlice(lanes[:])
		for _, x := range lanes {
			total += float64(x)
		}
		total += sumSquaresGeneric(g[n:hi])
	}
	archsimd.ClearAVXUpperBits()
	return total
}
