package access

import (
	"github.com/dfx-lab/dfx/dfx/schedule"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
)

// TestCentredDFTMWithExactNuEqualsExactTrace: with the exact centred target
// ν = (α²/σ²) tr Cov[x₀|x_t]/d of the mixture, (d/σ²)(1 − ν) is the exact
// trace (dfx/mixture, float64) to 1e-6 relative, across noise levels.
func TestCentredDFTMWithExactNuEqualsExactTrace(t *testing.T) {
	for _, tm := range []float64{0.05, 0.3, 0.9} {
		f := newFixture(t, 3, 5, 4, tm)
		ref, err := mixture.NewDirac(f.ym, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Eval(mixture.Query{At: mustAt(f.s, tm), X: f.xm, Want: mixture.Trace})
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewDFTMCentred(f.mix.Net())
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Trace(mustAt(f.s, tm), f.xm)
		if err != nil {
			t.Fatal(err)
		}
		for q := range f.x {
			if e := relErr(got[q], want.Trace[q]); e > 1e-6 {
				t.Errorf("t=%g query %d: DF-TM-c %g, mixture %g", tm, q, got[q], want.Trace[q])
			}
			if e := relErr(got[q], trace(f.refF[q])); e > 1e-6 {
				t.Errorf("t=%g query %d: DF-TM-c %g, reference Fisher %g", tm, q, got[q], trace(f.refF[q]))
			}
		}
	}
}

func TestCentredDFTMWithoutNuNetworkIsAnError(t *testing.T) {
	f := newFixture(t, 2, 3, 2, 0.5)
	n := *f.mix.Net()
	n.Nu = nil
	if _, err := NewDFTMCentred(&n); err == nil {
		t.Error("NewDFTMCentred accepted a Net without Nu")
	}
}

// mustAt is schedule.At for times the test knows are valid.
func mustAt(s schedule.Schedule, t float64) schedule.Coefficients {
	c, err := schedule.At(s, t)
	if err != nil {
		panic(err)
	}
	return c
}
