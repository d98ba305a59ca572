package access

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dfx-lab/dfx/dfx/score"
)

// A spec's label is the name tables and work records have always printed
// for it, whichever spelling was read, and it reads back to the same spec.
func TestLabelsAreTheNamesResultsArePrintedWith(t *testing.T) {
	for spec, want := range map[string]string{"vjp-exact": "vjp", "vjp": "vjp", "hutchinson-4": "hutchinson:4", "hutchinson:4": "hutchinson:4",
		"dftm": "df-tm", "df-tm": "df-tm", "dftmc": "df-tm-c", "df-tm-c": "df-tm-c", "hutchpp:6": "hutch++:6", "hutch++-6": "hutch++:6"} {
		s, err := ParseTrace(spec)
		if err != nil || s.Label() != want {
			t.Errorf("trace %q: label %q (%v), want %q", spec, s.Label(), err, want)
		}
	}
	for spec, want := range map[string]string{"vjp-matvec": "vjp", "vjp": "vjp", "df-ea": "dfea", "dfea": "dfea"} {
		s, err := ParseOperator(spec)
		if err != nil || s.Label() != want {
			t.Errorf("operator %q: label %q (%v), want %q", spec, s.Label(), err, want)
		}
	}
	roundTrip := func(kind, name, arg, form string, minK int, parse func(string) (Spec, error), spec func(string, int) (Spec, error)) {
		k := 0
		if arg != "" {
			k = max(minK, 1) + 2
		}
		s, err := spec(name, k)
		if err != nil {
			t.Fatalf("%s %s with K %d: %v", kind, name, k, err)
		}
		back, err := parse(s.Label())
		if err != nil || back != s {
			t.Errorf("%s %s: label %q reads as %+v (%v), want %+v", kind, name, s.Label(), back, err, s)
		}
		if k > 0 && !strings.HasSuffix(s.Label(), ":"+strings.TrimPrefix(s.Name, s.Family+"-")) ||
			strings.TrimSuffix(form, ":K") != strings.Split(s.Label(), ":")[0] {
			t.Errorf("%s %s: label %q, form %q", kind, name, s.Label(), form)
		}
	}
	for _, f := range TraceFamilies() {
		roundTrip("trace", f.Name, f.Arg, f.LabelForm(), f.MinK, ParseTrace, TraceSpec)
	}
	for _, f := range OperatorFamilies() {
		roundTrip("operator", f.Name, f.Arg, f.LabelForm(), f.MinK, ParseOperator, OperatorSpec)
	}
}

// TraceSpec is ParseTrace of "family:K", for a family's name or alias
// only.
func TestSpecOfAFamilyAndK(t *testing.T) {
	for _, c := range []struct {
		family string
		k      int
		spec   string
	}{{HutchinsonFamily, 4, "hutchinson-4"}, {"vjp", 0, "vjp-exact"}, {DFTMCFamily, 0, "dftmc"}, {"hutchpp", 6, "hutch++:6"}} {
		got, err := TraceSpec(c.family, c.k)
		want, _ := ParseTrace(c.spec)
		if err != nil || got != want {
			t.Errorf("TraceSpec(%q, %d) = %+v (%v), want %+v", c.family, c.k, got, err, want)
		}
	}
	if got, err := OperatorSpec(DFEAFamily, 0); err != nil || got.Name != "df-ea" || got.Needs != 0 {
		t.Errorf("OperatorSpec(df-ea) = %+v, %v", got, err)
	}
	for _, c := range []struct {
		family  string
		k       int
		unknown bool
	}{{HutchinsonFamily, 0, false}, {HutchinsonFamily, -1, false}, {DFTMFamily, 2, false},
		{"hutchinson-4", 0, true}, {"hutchinson:4", 0, true}, {"nope", 0, true}} {
		_, err := TraceSpec(c.family, c.k)
		var se *SpecError
		if !errors.As(err, &se) || se.Unknown != c.unknown {
			t.Errorf("TraceSpec(%q, %d): %v, want a SpecError (unknown %v)", c.family, c.k, err, c.unknown)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Must of an error did not panic")
		}
	}()
	Must(TraceSpec("nope", 0))
}

func TestALabelMustBeAFamilyName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering a label that is none of the family's names did not panic")
		}
	}()
	RegisterTrace(TraceFamily{Name: "registry-test-label", Aliases: []string{"rtl"}, Label: "other",
		New: func(int, Env) (score.TraceEstimator, error) { return nil, nil }})
}

// The cache builds an operator once per canonical name, whichever
// spelling asks, and DF-EA without the network (from the sampler's
// denoiser) even where it has one.
func TestOperatorCacheBuildsEachOperatorOnce(t *testing.T) {
	env, _ := registryEnv(t)
	c := &OperatorCache{Net: env.Net}
	var wg sync.WaitGroup
	got := make([]score.FisherOperator, 8)
	for i := range got {
		wg.Go(func() {
			var err error
			if got[i], err = c.Operator([]string{"vjp", "vjp-matvec"}[i%2]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, op := range got {
		if _, ok := op.(*VJPMatVec); !ok || op != got[0] {
			t.Fatalf("vjp: %v and %v, want one VJPMatVec", op, got[0])
		}
	}
	for _, spec := range []string{"dfea", "df-ea"} {
		if op, err := c.Operator(spec); err != nil || op != (DFEA{}) {
			t.Errorf("%s: %#v, %v; want the denoiser-only DFEA{}", spec, op, err)
		}
	}
	var se *SpecError
	if _, err := c.Operator("exact"); !errors.As(err, &se) || !se.Unknown || !strings.Contains(err.Error(), "vjp-matvec") {
		t.Errorf("an unknown operator: %v", err)
	}
	if _, err := (&OperatorCache{}).Operator("vjp"); err == nil || !strings.Contains(err.Error(), "needs a network") {
		t.Errorf("vjp without a network: %v", err)
	}
}
