package access

import (
	"testing"

	"github.com/dfx-lab/dfx/dfx/score"
)

// TestTraceSetOnTheExactMixtureGivesItsTrace: on the exact mixture as a
// network, every estimator of the set but Hutchinson is exact, Hutchinson
// with many probes is close, and the set holds the centred DF-TM only for a
// network with ν_θ.
func TestTraceSetOnTheExactMixtureGivesItsTrace(t *testing.T) {
	f := newFixture(t, 3, 5, 4, 0.3)
	s, err := NewTraceSet(f.mix.Net(), 0, 4096, 7)
	if err != nil {
		t.Fatal(err)
	}
	if s.Centred == nil || s.Hutchinson.K != 4096 || s.Hutchinson.Seed != 7 || s.Hutchinson.Probe != Rademacher {
		t.Fatalf("set %+v", s)
	}
	for _, c := range []struct {
		est score.TraceEstimator
		tol float64
	}{{s.VJP, 1e-6}, {s.DFTM, 1e-6}, {s.Centred, 1e-6}, {s.Hutchinson, 0.1}} {
		got, err := c.est.Trace(mustAt(f.s, f.t), f.xm)
		if err != nil {
			t.Fatal(err)
		}
		for q := range f.x {
			if e := relErr(got[q], trace(f.refF[q])); e > c.tol {
				t.Errorf("%s query %d: %g, exact %g (rel %g)", c.est.Name(), q, got[q], trace(f.refF[q]), e)
			}
		}
	}
	bare := *f.mix.Net()
	bare.Nu = nil
	if s, err := NewTraceSet(&bare, 0, 1, 1); err != nil || s.Centred != nil {
		t.Errorf("a network without ν_θ: centred %v, %v", s.Centred, err)
	}
}
