package access

import (
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
)

// TestVJPEstimatorsAgreeWithPackageMixture cross-checks the graph-side
// estimators (autodiff of the exact score) with dfx/mixture's float64 ground
// truth, across schedules' times, to 1e-6 relative.
func TestVJPEstimatorsAgreeWithPackageMixture(t *testing.T) {
	for _, tm := range []float64{0.05, 0.3, 0.9} {
		f := newFixture(t, 6, 7, 5, tm)
		y := mat.NewDense(len(f.y), f.d, nil)
		for i, r := range f.y {
			y.SetRow(i, r)
		}
		ref, err := mixture.NewDirac(y, nil)
		if err != nil {
			t.Fatal(err)
		}
		x, v := mat.NewDense(len(f.x), f.d, nil), mat.NewDense(len(f.x), f.d, nil)
		vs := make([][]float64, len(f.x))
		for q := range f.x {
			x.SetRow(q, f.x[q])
			vs[q] = make([]float64, f.d)
			for j := range vs[q] {
				vs[q][j] = float64((q+1)*(j+2)%5) - 2
			}
			v.SetRow(q, vs[q])
		}
		want, err := ref.Eval(mixture.Query{Schedule: f.s, T: tm, X: x, V: v, Want: mixture.Trace | mixture.MatVec})
		if err != nil {
			t.Fatal(err)
		}
		vjp, _ := NewVJPTrace(f.mix.Net(), 0)
		mv, _ := NewVJPMatVec(f.mix.Net())
		tr, err := vjp.Trace(f.x, tm)
		if err != nil {
			t.Fatal(err)
		}
		fv, err := mv.MatVec(f.x, tm, vs)
		if err != nil {
			t.Fatal(err)
		}
		for q := range f.x {
			if e := relErr(tr[q], want.Trace[q]); e > 1e-6 {
				t.Errorf("t=%g query %d: VJP trace %g, mixture %g", tm, q, tr[q], want.Trace[q])
			}
			if e := relNorm(fv[q], mat.Row(nil, q, want.MatVec)); e > 1e-6 {
				t.Errorf("t=%g query %d: VJP matvec relative error %g", tm, q, e)
			}
		}
	}
}
