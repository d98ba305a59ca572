package gemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
)

// TestKernelGemmMatchesReference checks the blocked micro-kernel product against
// gonum's pure-Go Gemm on ragged shapes (m, n, k not multiples of the blocks),
// both transposes of B, beta 0 and 1, and strided C.
func TestKernelGemmMatchesReference(t *testing.T) {
	if !Available {
		t.Skip("no micro-kernel on this CPU/platform")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(r, c, stride int) blas64.General {
		g := blas64.General{Rows: r, Cols: c, Stride: stride, Data: make([]float64, max(0, (r-1)*stride+c))}
		for i := range g.Data {
			g.Data[i] = rng.NormFloat64()
		}
		return g
	}
	ref := gonum.Implementation{}
	for _, dims := range [][3]int{{1, 1, 1}, {8, 24, 5}, {9, 25, 257}, {37, 100, 784}, {256, 300, 513}, {3, 50, 0}} {
		m, n, k := dims[0], dims[1], dims[2]
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, beta := range []float64{0, 1} {
				a := rnd(m, k, k+3)
				var b blas64.General
				if tB == blas.NoTrans {
					b = rnd(k, n, n+1)
				} else {
					b = rnd(n, k, k+2)
				}
				c := rnd(m, n, n+5)
				want := blas64.General{Rows: m, Cols: n, Stride: c.Stride, Data: append([]float64(nil), c.Data...)}
				ref.Dgemm(blas.NoTrans, tB, m, n, k, 1, a.Data, a.Stride, b.Data, b.Stride, beta, want.Data, want.Stride)
				Gemm(blas.NoTrans, tB, 1, a, b, beta, c)
				for i := range c.Data {
					if j := i % c.Stride; j >= n {
						if c.Data[i] != want.Data[i] {
							t.Fatalf("m=%d n=%d k=%d tB=%c beta=%g: wrote outside C at %d", m, n, k, tB, beta, i)
						}
						continue
					}
					if d := math.Abs(c.Data[i] - want.Data[i]); d > 1e-12*float64(k+1)*(1+math.Abs(want.Data[i])) {
						t.Fatalf("m=%d n=%d k=%d tB=%c beta=%g: C[%d] = %g, want %g", m, n, k, tB, beta, i, c.Data[i], want.Data[i])
					}
				}
			}
		}
	}
}

// BenchmarkKernelGemmBlock times one X[256,784]·Ycᵀ[784,4096] block product.
func BenchmarkKernelGemmBlock(b *testing.B) {
	if !Available {
		b.Skip("no micro-kernel")
	}
	const m, n, k = 256, 4096, 784
	x := blas64.General{Rows: m, Cols: k, Stride: k, Data: make([]float64, m*k)}
	y := blas64.General{Rows: n, Cols: k, Stride: k, Data: make([]float64, n*k)}
	c := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
	for i := range x.Data {
		x.Data[i] = float64(i%7) - 3
	}
	for i := range y.Data {
		y.Data[i] = float64(i%5) - 2
	}
	b.Run("NT", func(b *testing.B) {
		for b.Loop() {
			Gemm(blas.NoTrans, blas.Trans, 1, x, y, 0, c)
		}
		b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("NN", func(b *testing.B) {
		acc := blas64.General{Rows: m, Cols: k, Stride: k, Data: make([]float64, m*k)}
		for b.Loop() {
			Gemm(blas.NoTrans, blas.NoTrans, 1, c, y, 1, acc)
		}
		b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
