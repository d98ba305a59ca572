package mixture

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// BenchmarkTraceMNISTScale times the exact Fisher trace of a Dirac mixture
// the size of MNIST's training set: N = 60 000, d = 784, B = 256 queries.
// GFLOP/s counts the two dominant products, X Yᵀ and W Y: 4·B·N·d flops.
// BLASName() is logged; -tags openblas (cgo, libopenblas-dev) runs it on OpenBLAS.
func BenchmarkTraceMNISTScale(b *testing.B) {
	const n, d, bq = 60000, 784, 256
	rng := rand.New(rand.NewPCG(1, 1))
	y := mat.NewDense(n, d, nil)
	raw := y.RawMatrix().Data
	for i := range raw {
		raw[i] = rng.Float64()
	}
	m, err := NewDirac(y, nil)
	if err != nil {
		b.Fatal(err)
	}
	if c, err := strconv.Atoi(os.Getenv("DFX_BENCH_CHUNK")); err == nil {
		m.ChunkSize = c
	}
	x := mat.NewDense(bq, d, nil)
	for i := 0; i < bq; i++ {
		src := y.RawRowView(rng.IntN(n))
		for j := 0; j < d; j++ {
			x.Set(i, j, src[j]+0.5*rng.NormFloat64())
		}
	}
	s := schedule.DefaultEDM()
	c, _ := schedule.At(s, 0.5)
	q := Query{At: c, X: x, Want: Trace}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		if _, err := m.Eval(q); err != nil {
			b.Fatal(err)
		}
	}
	flops := 4.0 * n * d * bq
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/op")
	b.Logf("BLAS: %s", BLASName())
}

// BenchmarkTraceSmall is the toy scale: N = 5 000 points in d = 2, B = 4096.
func BenchmarkTraceSmall(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	y := randDense(rng, 5000, 2, 1)
	m, _ := NewDirac(y, nil)
	x := randDense(rng, 4096, 2, 1)
	c, _ := schedule.At(schedule.DefaultVE(), 0.3)
	q := Query{At: c, X: x, Want: Trace}
	for it := 0; it < b.N; it++ {
		if _, err := m.Eval(q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGaussianEval times the low-rank Gaussian mixture's log q, score,
// denoiser, trace and Fisher-vector product: K = 10 components of rank 16
// in d = 784, B = 256 queries.
func BenchmarkGaussianEval(b *testing.B) {
	const k, r, d, bq = 10, 16, 784, 256
	rng := rand.New(rand.NewPCG(3, 3))
	comps := make([]Component, k)
	for c := range comps {
		u := mat.NewDense(d, r, nil)
		lam := make([]float64, r)
		for j := range lam {
			u.Set((c*r+j)%d, j, 1)
			lam[j] = 0.1 + rng.Float64()
		}
		mean := make([]float64, d)
		for j := range mean {
			mean[j] = rng.NormFloat64()
		}
		comps[c] = Component{Mean: mean, Basis: u, Lambda: lam, Rest: 0.05, Weight: 1}
	}
	g, err := NewLowRank(comps)
	if err != nil {
		b.Fatal(err)
	}
	x := randDense(rng, bq, d, 1)
	v := randDense(rng, bq, d, 1)
	c, _ := schedule.At(schedule.DefaultVE(), 0.3)
	q := Query{At: c, X: x, V: v, Want: LogProb | Score | Denoiser | Trace | MatVec}
	for it := 0; it < b.N; it++ {
		if _, err := g.Eval(q); err != nil {
			b.Fatal(err)
		}
	}
}
