package draw

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TestQueriesAreTheKernelAroundX0AndStandardVectors: (x − α x₀)/σ and v
// are standard normal, independent of each other, and the same seed gives
// the same bytes.
func TestQueriesAreTheKernelAroundX0AndStandardVectors(t *testing.T) {
	const q, d = 2000, 3
	x0 := mat.NewDense(q, d, nil)
	for i := range q {
		x0.SetRow(i, []float64{1, -2, 3})
	}
	c := schedule.Coefficients{T: 0.5, Alpha: 0.8, Sigma: 0.6}
	x, v := Queries(c, x0, rand.New(rand.NewPCG(1, 2)))
	x2, v2 := Queries(c, x0, rand.New(rand.NewPCG(1, 2)))
	if !mat.Equal(x, x2) || !mat.Equal(v, v2) {
		t.Fatal("same seed, other queries")
	}
	z, w := make([]float64, q*d), v.RawMatrix().Data
	for i := range q {
		for j := range d {
			z[i*d+j] = (x.At(i, j) - c.Alpha*x0.At(i, j)) / c.Sigma
		}
	}
	for name, s := range map[string][]float64{"z": z, "v": w} {
		m, sd := stat.MeanStdDev(s, nil)
		if math.Abs(m) > 0.05 || math.Abs(sd-1) > 0.05 {
			t.Errorf("%s: mean %g, sd %g", name, m, sd)
		}
	}
	if r := stat.Correlation(z, w, nil); math.Abs(r) > 0.05 {
		t.Errorf("z and v correlate: %g", r)
	}
}
