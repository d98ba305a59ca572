// Package adam is the host optimiser's fused Adam/AdamW + EMA step over a
// variable's flat storage: one pass that reads and writes each element once
// (AVX-512 with GOEXPERIMENT=simd on amd64, the generic loop elsewhere),
// split over the cores for large variables.
package adam

import (
	"math"
	"runtime"
	"sync"
)

// Hyper holds one step's constants: the gradient's scale (global-norm
// clipping), the learning rate, Adam's β₁, β₂ and ε, the decoupled weight
// decay (applied only when positive), the debiasing factors c₁ = 1/(1−β₁ᵗ)
// and c₂ = 1/(1−β₂ᵗ), the EMA's decay and whether this is its first step.
type Hyper struct {
	Scale, LR, Beta1, Beta2, Eps, WD, C1, C2, EMADecay float64
	FirstEMA                                           bool
}

// FusedGeneric is the reference element loop:
//
//	g ← scale·g;  m ← β₁m + (1−β₁)g;  s ← β₂s + (1−β₂)g²
//	p ← p − (lr·c₁m/(√(c₂s) + ε) + lr·wd·p);  e ← p (first step) or d·e + (1−d)·p
func FusedGeneric[T float32 | float64](p, m, s, e, g []T, hp Hyper) {
	scale, b1, b2 := T(hp.Scale), T(hp.Beta1), T(hp.Beta2)
	ob1, ob2 := 1-b1, 1-b2
	lr, c1, c2, eps, lrwd := T(hp.LR), T(hp.C1), T(hp.C2), T(hp.Eps), T(hp.LR*max(hp.WD, 0))
	d := T(hp.EMADecay)
	od := 1 - d
	for i := range p {
		gi := g[i] * scale
		mi := b1*m[i] + ob1*gi
		si := b2*s[i] + ob2*(gi*gi)
		m[i], s[i] = mi, si
		stp := lr * (mi * c1) / (T(math.Sqrt(float64(si*c2))) + eps)
		if lrwd != 0 {
			stp += lrwd * p[i]
		}
		pi := p[i] - stp
		p[i] = pi
		if e != nil {
			if hp.FirstEMA {
				e[i] = pi
			} else {
				e[i] = d*e[i] + od*pi
			}
		}
	}
}

// parallelChunks runs fn over [0, n) in contiguous pieces, one per core for
// large n (the update is memory-bound: both cores' bandwidth helps).
func parallelChunks(n int, fn func(lo, hi int)) {
	const minChunk = 1 << 16
	workers := min(max(n/minChunk, 1), maxWorkers())
	if workers == 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + workers - 1) / workers
	step = (step + 15) &^ 15 // whole vectors per piece
	for lo := 0; lo < n; lo += step {
		hi := min(lo+step, n)
		wg.Add(1)
		go func() { defer wg.Done(); fn(lo, hi) }()
	}
	wg.Wait()
}

// sub is e[lo:hi], or nil for a nil e (no EMA).
func sub[T any](e []T, lo, hi int) []T {
	if e == nil {
		return nil
	}
	return e[lo:hi]
}

func sumSquaresGeneric(g []float32) float64 {
	var s float64
	for _, x := range g {
		s += float64(x) * float64(x)
	}
	return s
}

func maxWorkers() int { return max(runtime.GOMAXPROCS(0), 1) }
