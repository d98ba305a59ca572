package access

import (
	"math"
	"testing"

	"github.com/dfx-lab/dfx/dfx/score"
)

// TestEstimatorErrorsAtD64: on a 64-dimensional Dirac mixture with its exact
// score as the network, the exact VJP trace and DF-TM agree with the closed
// form, and the randomised estimators' mean relative error is logged
// (Hutchinson K=8 Rademacher and Hutch++ with 24 matvecs, 16 queries).
func TestEstimatorErrorsAtD64(t *testing.T) {
	f := newFixture(t, 64, 20, 16, 0.5)
	net := f.mix.Net()
	vjp, _ := NewVJPTrace(net, 0)
	hut, _ := NewHutchinson(net, 8, Rademacher, 3)
	hpp, _ := NewHutchPP(net, 24, 3)
	dftm, _ := NewDFTM(net)
	for _, e := range []score.TraceEstimator{vjp, hut, hpp, dftm} {
		got, err := e.Trace(mustAt(f.s, f.t), f.xm)
		if err != nil {
			t.Fatal(err)
		}
		var mean, worst float64
		for q := range f.x {
			r := relErr(got[q], trace(f.refF[q]))
			mean += r / float64(len(f.x))
			worst = math.Max(worst, r)
		}
		t.Logf("%-14s mean relative error %.3g, worst %.3g", e.Name(), mean, worst)
		if (e == score.TraceEstimator(vjp) || e == score.TraceEstimator(dftm)) && worst > 1e-6 {
			t.Errorf("%s: worst relative error %g > 1e-6", e.Name(), worst)
		}
	}
}
