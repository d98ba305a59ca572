package access

import (
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
)

// TestVJPEstimatorsAgreeWithPackageMixture cross-checks the graph-side
// estimators (autodiff of the exact score) with dfx/mixture's float64 ground
// truth, across schedules' times, to 1e-6 relative.
func TestVJPEstimatorsAgreeWithPackageMixture(t *testing.T) {
	for _, tm := range []float64{0.05, 0.3, 0.9} {
		f := newFixture(t, 6, 7, 5, tm)
		ref, err := mixture.NewDirac(f.ym, nil)
		if err != nil {
			t.Fatal(err)
		}
		v := mat.NewDense(len(f.x), f.d, nil)
		for q := range f.x {
			for j := range f.d {
				v.Set(q, j, float64((q+1)*(j+2)%5)-2)
			}
		}
		want, err := ref.Eval(mixture.Query{At: mustAt(f.s, tm), X: f.xm, V: v, Want: mixture.Trace | mixture.MatVec})
		if err != nil {
			t.Fatal(err)
		}
		vjp, _ := NewVJPTrace(f.mix.Net(), 0)
		mv, _ := NewVJPMatVec(f.mix.Net())
		tr, err := vjp.Trace(mustAt(f.s, tm), f.xm)
		if err != nil {
			t.Fatal(err)
		}
		fv, err := mv.Apply(score.State{At: mustAt(f.s, tm), X: f.xm}, v)
		if err != nil {
			t.Fatal(err)
		}
		for q := range f.x {
			if e := relErr(tr[q], want.Trace[q]); e > 1e-6 {
				t.Errorf("t=%g query %d: VJP trace %g, mixture %g", tm, q, tr[q], want.Trace[q])
			}
			if e := stats.RelNorm(fv.RawRowView(q), want.MatVec.RawRowView(q)); e > 1e-6 {
				t.Errorf("t=%g query %d: VJP matvec relative error %g", tm, q, e)
			}
		}
	}
}
