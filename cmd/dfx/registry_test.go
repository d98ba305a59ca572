package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/models"
)

// TestTraceFlagsTakeOldAndNewSpellings: dfx nll's --trace and dfx sample's
// -trace read dfx/access's registry: each spelling the commands took
// before (dftm, hutchinson:K, hutchpp:K, vjp, …) and each canonical name
// (what the estimator's Name() prints: df-tm, hutchinson-K, hutch++-K,
// vjp-exact, …) name the same estimator, and what the commands print for
// it is what they printed before, as is the trace network dfx sample
// loads for it.
func TestTraceFlagsTakeOldAndNewSpellings(t *testing.T) {
	for _, c := range []struct{ old, canonical, nll, density string }{
		{"vjp", "vjp-exact", "vjp", "vjp"},
		{"dftm", "df-tm", "dftm", "df-tm"},
		{"df-tm", "DF-TM", "dftm", "df-tm"},
		{"dftm-c", "df-tm-c", "dftm-c", "df-tm-c"},
		{"dftmc", " df-tm-c ", "dftm-c", "df-tm-c"},
		{"hutchinson:2", "hutchinson-2", "hutchinson:2", "hutchinson:2"},
		{"hutchpp:3", "hutch++-3", "hutchpp:3", ""},
		{"hutch++:6", "hutch++-6", "hutchpp:6", ""},
		{"skip-hutchinson:4", "skip-hutchinson-4", "skip-hutchinson:4", "skip-hutchinson:4"},
	} {
		a, err := parseTrace(c.old)
		if err != nil {
			t.Fatalf("--trace %s: %v", c.old, err)
		}
		b, err := parseTrace(c.canonical)
		if err != nil {
			t.Fatalf("--trace %s: %v", c.canonical, err)
		}
		if a.Spec != b.Spec || a.String() != c.nll || b.String() != c.nll {
			t.Errorf("%s → %+v (%s), %s → %+v (%s): want one estimator printed as %s", c.old, a.Spec, a, c.canonical, b.Spec, b, c.nll)
		}
		network := map[string]string{"df-tm": models.TraceScope, "df-tm-c": models.CentredTraceScope}[c.density]
		for _, v := range []string{c.old, c.canonical} {
			got, err := densityTrace(v)
			switch {
			case c.density == "" && (err == nil || !strings.Contains(err.Error(), "Hutch++")):
				t.Errorf("sample -trace %s: %q, %v, want Hutch++ refused", v, got.Label(), err)
			case c.density != "" && (err != nil || got.Label() != c.density):
				t.Errorf("sample -trace %s: %q, %v, want %s", v, got.Label(), err, c.density)
			case c.density != "" && models.TraceNetwork(got) != network:
				t.Errorf("sample -trace %s loads the trace network %q, want %q", v, models.TraceNetwork(got), network)
			}
		}
	}
}

// TestCommandsRunEveryCanonicalSpelling: the canonical names pass every
// check of dfx nll (which runs them on a toy network) and of dfx sample
// (which stops later, at a network folder without networks), as does each
// operator spelling of -operator; an unknown name lists the valid ones,
// on stderr only, with exit 2.
func TestCommandsRunEveryCanonicalSpelling(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	x := writeTemp(t, "x.csv", "0.3,0.4\n")
	score := "../../toys/checkpoints/checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt"
	nll := func(tr string) (int, string, string) {
		return runCLI("nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", tr, "--solver", "euler", "--steps", "1")
	}
	for _, tr := range []string{"vjp-exact", "hutchinson-2", "hutch++-3"} {
		if code, out, e := nll(tr); code != 0 || out == "" {
			t.Errorf("nll --trace %s: exit %d, %q", tr, code, e)
		}
	}
	for _, tr := range []string{"df-tm", "df-tm-c", "skip-hutchinson-2"} { // refused later, for want of the network
		if _, _, e := nll(tr); strings.Contains(e, "unknown --trace") || !strings.Contains(e, "network") {
			t.Errorf("nll --trace %s: %q", tr, e)
		}
	}
	sample := func(extra ...string) string {
		_, _, e := runCLI(append([]string{"sample", "-n", "1", "-png", filepath.Join(dir, "s.png"), "-nets", empty}, extra...)...)
		return e
	}
	for _, tr := range []string{"vjp-exact", "df-tm", "df-tm-c", "hutchinson-2", "skip-hutchinson-2"} {
		if e := sample("-density", "offset:1", "-trace", tr); !strings.Contains(e, "has no eps network") {
			t.Errorf("sample -trace %s: %q, want its flags accepted", tr, e)
		}
	}
	for _, op := range []string{"dfea", "vjp", "df-ea", "vjp-matvec"} {
		if e := sample("-guide", "centring", "-operator", op); strings.Contains(e, "unknown --operator") {
			t.Errorf("sample -operator %s: %q", op, e)
		}
	}
	code, out, e := nll("hutch")
	if code != 2 || out != "" || strings.Count(e, "\n") != 1 || !strings.Contains(e, "unknown --trace") {
		t.Errorf("nll --trace hutch: exit %d, stdout %q, stderr %q", code, out, e)
	}
	for _, name := range []string{"vjp-exact", "hutchinson-K", "hutch++-K", "df-tm", "df-tm-c", "skip-hutchinson-K", "hutchinson:K", "dftm"} {
		if !strings.Contains(e, name) {
			t.Errorf("nll --trace hutch: %q does not list %s", e, name)
		}
	}
	if e := sample("-guide", "centring", "-operator", "exact"); !strings.Contains(e, "unknown --operator") || !strings.Contains(e, "vjp-matvec") {
		t.Errorf("sample -operator exact: %q", e)
	}
}
