package adam

import (
	"math"
	"testing"
)

// The AVX-512 kernel (with the two cores splitting a large variable and a
// remainder that is not a whole vector) takes the generic loop's step, with
// and without weight decay and EMA, and a negative decay is ignored as
// GoMLX ignores it.
func TestFusedAdamKernelMatchesTheGenericLoop(t *testing.T) {
	for _, n := range []int{1, 17, 300_007} {
		for _, hp := range []Hyper{
			{Scale: 0.7, LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-7, C1: 3.2, C2: 41, EMADecay: 0.99},
			{Scale: 1, LR: 3e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-7, WD: 0.01, C1: 1.1, C2: 2.5, EMADecay: 0.999, FirstEMA: true},
			{Scale: 1, LR: 3e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-7, WD: -0.5, C1: 1.1, C2: 2.5},
		} {
			mk := func(seed float32) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = seed * float32((i*7919)%1013-506) / 506
				}
				return v
			}
			var e1, e2 []float32
			if hp.EMADecay > 0 {
				e1, e2 = mk(0.3), mk(0.3)
			}
			p1, m1, s1, g := mk(1), mk(0.01), mk(0.001), mk(0.5)
			for i := range s1 {
				s1[i] = s1[i] * s1[i]
			}
			p2, m2, s2 := append([]float32(nil), p1...), append([]float32(nil), m1...), append([]float32(nil), s1...)
			Fused32(p1, m1, s1, e1, g, hp)
			FusedGeneric(p2, m2, s2, e2, g, hp)
			for i := range p1 {
				if d := math.Abs(float64(p1[i] - p2[i])); d > 1e-6*math.Max(1, math.Abs(float64(p2[i]))) || m1[i] != m2[i] || s1[i] != s2[i] {
					t.Fatalf("n=%d wd=%g: element %d: p %g vs %g, m %g vs %g, s %g vs %g", n, hp.WD, i, p1[i], p2[i], m1[i], m2[i], s1[i], s2[i])
				}
				if e1 != nil && math.Abs(float64(e1[i]-e2[i])) > 1e-6*math.Max(1, math.Abs(float64(e2[i]))) {
					t.Fatalf("n=%d: EMA element %d: %g vs %g", n, i, e1[i], e2[i])
				}
			}
			if hp.WD < 0 {
				q := append([]float32(nil), p2...)
				hp0 := hp
				hp0.WD = 0
				m3, s3 := mk(0.01), mk(0.001)
				for i := range s3 {
					s3[i] = s3[i] * s3[i]
				}
				r := mk(1)
				FusedGeneric(r, m3, s3, nil, g, hp0)
				for i := range r {
					if r[i] != q[i] {
						t.Fatalf("a negative weight decay changed element %d: %g vs %g", i, q[i], r[i])
					}
				}
			}
		}
	}
}
