package mixture

import (
	"math"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TestNegligibleComponentsLeaveNoTrace: Eval leaves components whose
// responsibility is below 10⁻¹⁸ for every row of a block out of the
// moments. Three isotropic components in d = 3: the first far from every
// query (left out of the block, so the others' places in the active list
// differ from their indices), the third queried where its responsibility
// is ≈ 10⁻²⁴ (row 0) and ≈ 10⁻⁴ (row 1, kept), against the closed form
// tr F = Σ r_k (d/c − ‖S_k − s‖²), S_k = −(x − αμ_k)/c.
func TestNegligibleComponentsLeaveNoTrace(t *testing.T) {
	const d = 3
	e1 := mat.NewDense(d, 1, []float64{1, 0, 0})
	far := []float64{11, 0, 0}
	away := []float64{0, -40, 0} // responsibility ≈ e^{−800} at both rows: left out
	g, err := NewLowRank([]Component{
		{Mean: away, Basis: e1, Lambda: []float64{1}, Rest: 1, Weight: 1},
		{Mean: make([]float64, d), Basis: e1, Lambda: []float64{1}, Rest: 1, Weight: 1},
		{Mean: far, Basis: e1, Lambda: []float64{1}, Rest: 1, Weight: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := schedule.At(schedule.DefaultVE(), 0.2)
	v := c.Alpha*c.Alpha + c.Sigma*c.Sigma
	// x₁ = 0: r₂ = e^{−α²·121/(2v)} ≈ 1e-24; x₂ nearer the second mean: r₂ ≈ 1e-4
	x := mat.NewDense(2, d, []float64{0, 0, 0, c.Alpha*11/2 - 0.84*v, 0.3, -0.2})
	// rows x₁, x₂, x₁, x₂ on one worker: two blocks of both rows each
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	x4 := mat.NewDense(4, d, nil)
	for i := range 4 {
		x4.SetRow(i, x.RawRowView(i%2))
	}
	res, err := g.Eval(Query{At: c, X: x4, Want: Score | Trace})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		xi := x4.RawRowView(i)
		var logw [2]float64
		var sk [2][d]float64
		for k, mu := range [][]float64{make([]float64, d), far} { // the third, away, has r = 0 at both
			m := 0.0
			for j := range d {
				dj := xi[j] - c.Alpha*mu[j]
				sk[k][j] = -dj / v
				m += dj * dj
			}
			logw[k] = -m / (2 * v)
		}
		top := max(logw[0], logw[1])
		r0, r1 := math.Exp(logw[0]-top), math.Exp(logw[1]-top)
		r0, r1 = r0/(r0+r1), r1/(r0+r1)
		var s [d]float64
		for j := range d {
			s[j] = r0*sk[0][j] + r1*sk[1][j]
		}
		want := 0.0
		for k, r := range []float64{r0, r1} {
			dev := 0.0
			for j := range d {
				dev += (sk[k][j] - s[j]) * (sk[k][j] - s[j])
			}
			want += r * (d/v - dev)
		}
		if got := res.Trace[i]; math.Abs(got-want) > 1e-13*math.Abs(want) {
			t.Errorf("row %d (r₂ = %.3g): tr F %.16g, closed form %.16g", i, r1, got, want)
		}
		for j := range d {
			if got := res.Score.At(i, j); math.Abs(got-s[j]) > 1e-13*(1+math.Abs(s[j])) {
				t.Errorf("row %d (r₂ = %.3g): score[%d] %.16g, closed form %.16g", i, r1, j, got, s[j])
			}
		}
		if i%2 == 0 && r1 > 1e-20 || i%2 == 1 && !(r1 > 1e-6 && r1 < 1e-2) {
			t.Fatalf("row %d: r₂ = %g is not in the range this test needs", i, r1)
		}
	}
}
