package access

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/score"
)

// registryEnv is a Net with ε, t and ν (an exact Dirac mixture) to build
// every family on.
func registryEnv(t *testing.T) (Env, *fixture) {
	f := newFixture(t, 3, 4, 2, 0.4)
	return Env{Net: f.mix.Net(), Seed: 7}, f
}

// specsOf are a family's spellings: its canonical name (with K = MinK and
// K = 5) and the same through ":" and through each alias.
func specsOf(name string, aliases []string, arg string, minK int) (canonical []string, others map[string]string) {
	others = map[string]string{}
	if arg == "" {
		for _, a := range aliases {
			others[a] = name
		}
		return []string{name}, others
	}
	for _, k := range []int{max(minK, 1), 5} {
		c := fmt.Sprintf("%s-%d", name, k)
		canonical = append(canonical, c)
		others[fmt.Sprintf("%s:%d", name, k)] = c
		for _, a := range aliases {
			others[fmt.Sprintf("%s:%d", a, k)] = c
			others[fmt.Sprintf("%s-%d", a, k)] = c
		}
	}
	return canonical, others
}

func TestEveryRegisteredNameRoundTripsAndEveryAliasMapsToIt(t *testing.T) {
	env, _ := registryEnv(t)
	check := func(kind, spec, want string, build func(string) (string, error), parse func(string) (Spec, error)) {
		s, err := parse(spec)
		if err != nil || s.Name != want {
			t.Errorf("%s %q parses as %q (%v), want %q", kind, spec, s.Name, err, want)
			return
		}
		got, err := build(spec)
		if err != nil || got != want {
			t.Errorf("%s %q builds %q (%v), want Name() %q", kind, spec, got, err, want)
		}
	}
	buildTrace := func(s string) (string, error) {
		e, err := NewTrace(s, env)
		if err != nil {
			return "", err
		}
		return e.Name(), nil
	}
	buildOp := func(s string) (string, error) {
		e, err := NewOperator(s, env)
		if err != nil {
			return "", err
		}
		return e.Name(), nil
	}
	// families registered by other packages linked into this test (models'
	// skip-hutchinson) need their own networks: parsed here, built there
	own := []string{"vjp-exact", "hutchinson", "hutch++", "df-tm", "df-tm-c", "registry-test-twice"}
	parseOnly := func(s string) (string, error) {
		p, err := ParseTrace(s)
		return p.Name, err
	}
	n := 0
	for _, f := range TraceFamilies() {
		buildTrace := buildTrace
		if !slices.Contains(own, f.Name) {
			buildTrace = parseOnly
		}
		canon, others := specsOf(f.Name, f.Aliases, f.Arg, f.MinK)
		for _, c := range canon {
			check("trace", c, c, buildTrace, ParseTrace)
			n++
		}
		for s, c := range others {
			check("trace", s, c, buildTrace, ParseTrace)
		}
	}
	for _, f := range OperatorFamilies() {
		canon, others := specsOf(f.Name, f.Aliases, f.Arg, f.MinK)
		for _, c := range canon {
			check("operator", c, c, buildOp, ParseOperator)
			n++
		}
		for s, c := range others {
			check("operator", s, c, buildOp, ParseOperator)
		}
	}
	if n < 9 {
		t.Errorf("only %d canonical names checked: families are missing", n)
	}
	// the spellings that commands and committed configurations use
	for spec, want := range map[string]string{"vjp": "vjp-exact", "hutchinson:4": "hutchinson-4", "hutchinson-16": "hutchinson-16",
		"hutchpp:6": "hutch++-6", "hutch++:48": "hutch++-48", "dftm": "df-tm", "df-tm": "df-tm", "dftm-c": "df-tm-c", "dftmc": "df-tm-c"} {
		check("trace", spec, want, buildTrace, ParseTrace)
	}
	for spec, want := range map[string]string{"vjp": "vjp-matvec", "dfea": "df-ea", "df-ea": "df-ea"} {
		check("operator", spec, want, buildOp, ParseOperator)
	}
}

// An alias builds the very estimator of its canonical name: same family,
// same K, same seed, so the same numbers bit for bit.
func TestAliasesBuildTheCanonicalEstimator(t *testing.T) {
	env, f := registryEnv(t)
	c := mustAt(f.s, f.t)
	direct := map[string]func() (score.TraceEstimator, error){
		"vjp":          func() (score.TraceEstimator, error) { return NewVJPTrace(env.Net, 0) },
		"hutchinson:3": func() (score.TraceEstimator, error) { return NewHutchinson(env.Net, 3, Rademacher, env.Seed) },
		"hutchpp:6":    func() (score.TraceEstimator, error) { return NewHutchPP(env.Net, 6, env.Seed) },
		"dftm":         func() (score.TraceEstimator, error) { return NewDFTM(env.Net) },
		"dftmc":        func() (score.TraceEstimator, error) { return NewDFTMCentred(env.Net) },
	}
	for spec, mk := range direct {
		want, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewTrace(spec, env)
		if err != nil {
			t.Fatal(err)
		}
		a, err := got.Trace(c, f.xm)
		if err != nil {
			t.Fatal(err)
		}
		b, err := want.Trace(c, f.xm)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) || got.Name() != want.Name() {
			t.Errorf("%s: %s %v, the direct %s %v", spec, got.Name(), a, want.Name(), b)
		}
	}
}

func TestUnknownSpecListsTheValidNames(t *testing.T) {
	for _, spec := range []string{"exact", "", "hutch", "df-tm-3", "VJP", "skip"} {
		_, err := ParseTrace(spec)
		var se *SpecError
		if !errors.As(err, &se) || !se.Unknown {
			t.Errorf("trace %q: %v, want an unknown-name SpecError", spec, err)
			continue
		}
		for _, name := range append(TraceForms(), "hutchinson:K", "dftm") {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("trace %q: %q does not list %s", spec, err, name)
			}
		}
	}
	_, err := ParseOperator("exact")
	for _, name := range append(OperatorForms(), "dfea") {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("operator exact: %v does not list %s", err, name)
		}
	}
}

func TestBadKIsAnError(t *testing.T) {
	for spec, want := range map[string]string{"hutchinson:0": "K must be an integer ≥ 1", "hutchinson:x": "K must be an integer ≥ 1",
		"hutchinson-0": "K must be an integer ≥ 1", "hutchinson:-2": "K must be an integer ≥ 1", "hutchinson": "needs the number of probes",
		"hutchinson:": "K must be an integer ≥ 1", "hutchpp:2": "K ≥ 3", "hutch++-1": "K ≥ 3", "df-tm:2": "takes no K", "vjp:1": "takes no K"} {
		_, err := ParseTrace(spec)
		var se *SpecError
		if !errors.As(err, &se) || se.Unknown || !strings.Contains(err.Error(), want) {
			t.Errorf("trace %q: %v, want a SpecError saying %q", spec, err, want)
		}
		env, _ := registryEnv(t)
		if _, err := NewTrace(spec, env); err == nil {
			t.Errorf("NewTrace(%q) built an estimator", spec)
		}
	}
}

// Env's row bounds reach the estimators, and each family says what it needs.
func TestEnvReachesTheEstimators(t *testing.T) {
	env, _ := registryEnv(t)
	env.ExactRows, env.ProbeRows = 5, 6
	v, err := NewTrace("vjp-exact", env)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewTrace("hutchinson-2", env)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewTrace("hutch++-3", env)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.(*VJPTrace).r.maxRows; r != 5 {
		t.Errorf("vjp-exact: %d rows a call, want ExactRows 5", r)
	}
	if r := h.(*Hutchinson).r.maxRows; r != 6 {
		t.Errorf("hutchinson: %d rows a call, want ProbeRows 6", r)
	}
	if r := p.(*HutchPP).r.maxRows; r != 6 {
		t.Errorf("hutch++: %d rows a call, want ProbeRows 6", r)
	}
	if h.(*Hutchinson).Seed != 7 || p.(*HutchPP).Seed != 7 {
		t.Error("the seed did not reach the estimators")
	}
	if op, err := NewOperator("dfea", Env{}); err != nil || op.Name() != "df-ea" {
		t.Errorf("df-ea without a network: %v, %v (want the denoiser-only DF-EA)", op, err)
	}
	bare := *env.Net
	bare.T, bare.Nu = nil, nil
	for _, spec := range []string{"df-tm", "df-tm-c"} {
		if _, err := NewTrace(spec, Env{Net: &bare}); err == nil || !strings.Contains(err.Error(), "needs") {
			t.Errorf("%s on a Net without its network: %v", spec, err)
		}
		if _, err := NewTrace(spec, Env{}); err == nil {
			t.Errorf("%s without a Net built", spec)
		}
	}
	if s, _ := ParseTrace("hutchinson:3"); !s.Random || s.K != 3 || s.Family != "hutchinson" {
		t.Errorf("hutchinson:3 parses as %+v", s)
	}
	if s, _ := ParseTrace("dftm"); s.Random || s.Needs&NeedsT == 0 {
		t.Errorf("dftm parses as %+v", s)
	}
}

// A package outside dfx/access registers its own family (as models does
// with skip-hutchinson); a name taken twice is a programming error.
func TestOtherPackagesRegisterFamilies(t *testing.T) {
	RegisterTrace(TraceFamily{Name: "registry-test-twice", Arg: "the number of probes", Random: true, Needs: NeedsNet,
		New: func(k int, env Env) (score.TraceEstimator, error) {
			h, err := NewHutchinson(env.Net, k, Rademacher, env.Seed)
			return ControlVariate{Known: h, Residual: h, Label: fmt.Sprintf("registry-test-twice-%d", k)}, err
		}})
	env, _ := registryEnv(t)
	e, err := NewTrace("registry-test-twice:2", env)
	if err != nil || e.Name() != "registry-test-twice-2" {
		t.Fatalf("the registered family: %v, %v", e, err)
	}
	if !slices.Contains(TraceForms(), "registry-test-twice-K") {
		t.Errorf("TraceForms %v lacks the new family", TraceForms())
	}
	defer func() {
		if recover() == nil {
			t.Error("registering an alias that is another family's name did not panic")
		}
	}()
	RegisterTrace(TraceFamily{Name: "other", Aliases: []string{"hutchinson"}, New: func(int, Env) (score.TraceEstimator, error) { return nil, nil }})
}

func TestRowsPerPointIsWhatAPointCosts(t *testing.T) {
	env, _ := registryEnv(t)
	for spec, want := range map[string]int{"vjp-exact": 3, "hutchinson-4": 4, "hutch++-6": 6, "df-tm": 1, "df-tm-c": 1} {
		e, err := NewTrace(spec, env)
		if err != nil {
			t.Fatal(err)
		}
		if got := RowsPerPoint(e, 3); got != want {
			t.Errorf("%s: %d rows a point, want %d", spec, got, want)
		}
		if got := RowsPerPoint(ControlVariate{Known: e, Residual: e}, 3); got != want {
			t.Errorf("a control variate with %s: %d rows a point, want %d", spec, got, want)
		}
	}
}
