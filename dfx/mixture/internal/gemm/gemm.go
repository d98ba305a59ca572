// Package gemm is dfx/mixture's pure-Go float64 matrix product for builds
// without cgo: a blocked GEMM in the manner of BLIS (pack a kc-deep slice of A
// and of B, then an 8×24 register-blocked micro-kernel in AVX-512 assembly,
// gemm_amd64.s) for the two products the Dirac mixture needs, G = X·Ycᵀ and
// Acc += E·Yc (A not transposed, alpha 1, beta 0 or 1). It lives apart from
// package mixture because a package that uses cgo cannot hold Go assembly.
package gemm

import (
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

const (
	kernMR    = 8   // rows of C per micro-kernel call (broadcast operand)
	kernNR    = 24  // columns of C per micro-kernel call (three 8-wide vectors)
	kernKCMax = 256 // depth of a packed slice: B's 24-column panel (kc·24·8 B) stays in L1
)

var packPool = sync.Pool{New: func() any { return new([]float64) }}

func getBuf(n int) *[]float64 {
	p := packPool.Get().(*[]float64)
	if cap(*p) < n {
		*p = make([]float64, n)
	}
	*p = (*p)[:n]
	return p
}

// Gemm has blas64.Gemm's signature. It computes C = A·op(B) (beta = 0) or
// C += A·op(B) (beta = 1) with the micro-kernel, splitting C's columns over
// GOMAXPROCS goroutines; any other call (transposed A, alpha ≠ 1, another
// beta) or a CPU without the kernel (Available false) goes to blas64.Gemm.
// It is safe for concurrent use.
func Gemm(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	if !Available || tA != blas.NoTrans || alpha != 1 || (beta != 0 && beta != 1) {
		blas64.Gemm(tA, tB, alpha, a, b, beta, c)
		return
	}
	m, k := a.Rows, a.Cols
	n := b.Cols
	kb := b.Rows
	if tB != blas.NoTrans {
		n, kb = b.Rows, b.Cols
	}
	if kb != k || c.Rows != m || c.Cols != n {
		panic("gemm: Gemm: shape mismatch")
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if beta == 0 {
			for i := 0; i < m; i++ {
				clear(c.Data[i*c.Stride : i*c.Stride+n])
			}
		}
		return
	}
	nslices := (k + kernKCMax - 1) / kernKCMax
	kc := (k + nslices - 1) / nslices // balanced depth
	mpanels := (m + kernMR - 1) / kernMR
	npanels := (n + kernNR - 1) / kernNR
	workers := min(runtime.GOMAXPROCS(0), npanels)
	pa := getBuf(mpanels * kernMR * kc)
	defer packPool.Put(pa)

	for pc := 0; pc < k; pc += kc {
		kd := min(kc, k-pc)
		packA(*pa, a, pc, kd, mpanels)
		add := beta == 1 || pc > 0
		// Panels are handed out one at a time, so that a core slowed by other
		// work takes fewer of them (a static split waits for the slowest).
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pb := getBuf(kd*kernNR + kernMR*kernNR)
				defer packPool.Put(pb)
				bbuf, tmp := (*pb)[:kd*kernNR], (*pb)[kd*kernNR:]
				for {
					jp := int(next.Add(1) - 1)
					if jp >= npanels {
						return
					}
					j0 := jp * kernNR
					nb := min(kernNR, n-j0)
					packB(bbuf, b, tB, pc, kd, j0, nb)
					panelColumn(*pa, bbuf, tmp, c, m, kd, j0, nb, add)
				}
			}()
		}
		wg.Wait()
	}
}

// panelColumn computes (or, with add, adds) the columns [j0, j0+nb) of
// C's m rows from the packed A (all row panels, depth kd) and one packed
// B panel: full 8×24 tiles straight into C, edge tiles through tmp.
func panelColumn(pa, bbuf, tmp []float64, c blas64.General, m, kd, j0, nb int, add bool) {
	mpanels := (m + kernMR - 1) / kernMR
	for ip := 0; ip < mpanels; ip++ {
		i0 := ip * kernMR
		mb := min(kernMR, m-i0)
		ap := &pa[ip*kernMR*kd]
		if mb == kernMR && nb == kernNR {
			kernel8x24(kd, ap, &bbuf[0], &c.Data[i0*c.Stride+j0], c.Stride, add)
			continue
		}
		kernel8x24(kd, ap, &bbuf[0], &tmp[0], kernNR, false)
		for i := 0; i < mb; i++ {
			dst := c.Data[(i0+i)*c.Stride+j0 : (i0+i)*c.Stride+j0+nb]
			src := tmp[i*kernNR : i*kernNR+nb]
			if add {
				for j, v := range src {
					dst[j] += v
				}
			} else {
				copy(dst, src)
			}
		}
	}
}

// packA writes A[:, pc:pc+kd] as mpanels micro-panels of kernMR rows, each
// stored depth-major (kernMR values per depth), rows past m zero.
func packA(dst []float64, a blas64.General, pc, kd, mpanels int) {
	for ip := 0; ip < mpanels; ip++ {
		panel := dst[ip*kernMR*kd : (ip+1)*kernMR*kd]
		for i := 0; i < kernMR; i++ {
			r := ip*kernMR + i
			if r >= a.Rows {
				for p := 0; p < kd; p++ {
					panel[p*kernMR+i] = 0
				}
				continue
			}
			row := a.Data[r*a.Stride+pc : r*a.Stride+pc+kd]
			for p, v := range row {
				panel[p*kernMR+i] = v
			}
		}
	}
}

// packB writes op(B)[pc:pc+kd, j0:j0+nb] depth-major, kernNR values per
// depth, columns past nb zero.
func packB(dst []float64, b blas64.General, tB blas.Transpose, pc, kd, j0, nb int) {
	if nb < kernNR {
		clear(dst)
	}
	if tB == blas.NoTrans {
		for p := 0; p < kd; p++ {
			copy(dst[p*kernNR:p*kernNR+nb], b.Data[(pc+p)*b.Stride+j0:])
		}
		return
	}
	for j := 0; j < nb; j++ {
		row := b.Data[(j0+j)*b.Stride+pc : (j0+j)*b.Stride+pc+kd]
		for p, v := range row {
			dst[p*kernNR+j] = v
		}
	}
}
