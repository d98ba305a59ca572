package access

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dfx-lab/dfx/dfx/score"
)

// The one registry of trace estimators and Fisher operators: every command,
// experiment and notebook builds them from a spec string here, and a spec's
// canonical name is exactly what the built value's Name() prints.
//
// A spec is a family's name, and for a family with an argument K (probes,
// matvecs) the name and K joined by "-" (canonical, e.g. "hutchinson-16")
// or ":" (e.g. "hutchinson:16"). A family may accept other names (aliases,
// e.g. "dftm" for "df-tm"). Networks register their own families from
// their packages (RegisterTrace), so this package imports none of them.

// Env is what a registered estimator or operator is built from.
type Env struct {
	// Net is the network (nil for what needs none: DF-EA from a sampler's
	// denoiser).
	Net *Net
	// Seed seeds the probes of a randomised estimator (Family.Random).
	Seed uint64
	// ExactRows bounds the rows of one graph call of the exact VJP trace (d
	// rows a point; NewVJPTrace's maxRows); ≤ 0: DefaultMaxRows.
	ExactRows int
	// ProbeRows bounds the rows (points × probes) of one graph call of a
	// Hutchinson-type estimator (SetMaxRows); ≤ 0: DefaultMaxRows.
	ProbeRows int
}

// Needs are the networks of a Net, beyond ε_θ, that a family uses.
type Needs uint8

const (
	NeedsNet Needs = 1 << iota // a network (Env.Net)
	NeedsT                     // the DF-TM network t_θ (Net.T)
	NeedsNu                    // the centred DF-TM network ν_θ (Net.Nu)
)

// Family is one registered kind of estimator E (a score.TraceEstimator or
// a score.FisherOperator).
type Family[E any] struct {
	Name    string   // canonical name, or its stem for a family with K
	Aliases []string // other names accepted for Name
	// Label is how tables, work records and commands print the family's
	// specs (Spec.Label): Name when empty, else one of Aliases (e.g. "vjp"
	// for vjp-exact, the name results were keyed by before the canonical
	// names, which keeps their keys).
	Label string
	// Arg says what K counts ("the number of probes"), "" for a family
	// without K; MinK is its least value (0 is taken as 1).
	Arg  string
	MinK int
	// Random: the estimate depends on Env.Seed.
	Random bool
	Needs  Needs
	Doc    string // one line for help texts
	// New builds the estimator from K (0 without Arg) and env; its Name()
	// must print the spec's canonical name.
	New func(k int, env Env) (E, error)
}

// TraceFamily and OperatorFamily are the two registered kinds.
type (
	TraceFamily    = Family[score.TraceEstimator]
	OperatorFamily = Family[score.FisherOperator]
)

// Spec is a parsed spec string.
type Spec struct {
	Name   string // canonical: the family's name, or name-K
	Family string // the family's canonical name
	K      int    // the argument (0 for a family without one)
	Random bool   // the family's Random
	Needs  Needs  // the family's Needs
	label  string // the family's Label (or Name)
}

// Label is the spec as tables, work records and commands print it: its
// family's Label, with ":K" for a family with K (e.g. "vjp",
// "hutchinson:4"). It is a spelling the registry reads back to this spec.
func (s Spec) Label() string {
	if s.K == 0 {
		return s.label
	}
	return s.label + ":" + strconv.Itoa(s.K)
}

// SpecError is a spec that names no registered family (Unknown) or gives
// a family a bad argument.
type SpecError struct {
	What    string // "trace estimator" or "Fisher operator"
	Spec    string
	Reason  string
	Unknown bool
	Valid   string // the accepted spellings, canonical first (for messages)
}

func (e *SpecError) Error() string { return fmt.Sprintf("access: %s %q: %s", e.What, e.Spec, e.Reason) }

// registry is one kind's families, safe for concurrent use.
type registry[E any] struct {
	what     string
	mu       sync.RWMutex
	families []*Family[E]
}

var (
	traces    = &registry[score.TraceEstimator]{what: "trace estimator"}
	operators = &registry[score.FisherOperator]{what: "Fisher operator"}
)

// RegisterTrace adds a trace family; it panics when a name it takes is
// taken already (a programming error, found at start-up).
func RegisterTrace(f TraceFamily) { traces.register(f) }

// RegisterOperator adds a Fisher-operator family (see RegisterTrace).
func RegisterOperator(f OperatorFamily) { operators.register(f) }

// ParseTrace reads a trace spec without building anything (e.g. to check a
// flag before a network is loaded).
func ParseTrace(spec string) (Spec, error) {
	_, s, err := traces.parse(spec)
	return s, err
}

// ParseOperator reads a Fisher-operator spec without building anything.
func ParseOperator(spec string) (Spec, error) {
	_, s, err := operators.parse(spec)
	return s, err
}

// TraceSpec is the spec of the trace family named family (its name or an
// alias) with argument k (0 for a family without one): what ParseTrace
// reads from "family:k".
func TraceSpec(family string, k int) (Spec, error) { return traces.spec(family, k) }

// OperatorSpec is TraceSpec for a Fisher-operator family.
func OperatorSpec(family string, k int) (Spec, error) { return operators.spec(family, k) }

// Must is s, and panics on err: for a spec a package fixes in its source
// (a wrong one is a programming error, found at start-up).
func Must(s Spec, err error) Spec {
	if err != nil {
		panic(err)
	}
	return s
}

// NewTrace builds the trace estimator that spec names on env; its Name()
// is the spec's canonical name.
func NewTrace(spec string, env Env) (score.TraceEstimator, error) { return traces.build(spec, env) }

// NewOperator builds the Fisher operator that spec names on env; its
// Name() is the spec's canonical name.
func NewOperator(spec string, env Env) (score.FisherOperator, error) {
	return operators.build(spec, env)
}

// TraceFamilies and OperatorFamilies list the registered families, sorted
// by name.
func TraceFamilies() []TraceFamily       { return traces.list() }
func OperatorFamilies() []OperatorFamily { return operators.list() }

// TraceForms and OperatorForms are the canonical spellings, a family with K
// as "name-K" (for messages and help texts).
func TraceForms() []string    { return forms(traces.list()) }
func OperatorForms() []string { return forms(operators.list()) }

// TraceSpellings and OperatorSpellings list every accepted spelling,
// canonical first ("df-tm, hutchinson-K, …; also dftm, hutchinson:K, …").
func TraceSpellings() string    { return traces.spellings() }
func OperatorSpellings() string { return operators.spellings() }

func (r *registry[E]) spellings() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.valid()
}

// LabelForm is how Spec.Label prints the family's specs, with K as a
// placeholder ("vjp", "hutchinson:K"; for messages and help texts).
func (f *Family[E]) LabelForm() string { return (&Family[E]{Name: f.label(), Arg: f.Arg}).form(":") }

// label is Label, or Name without one.
func (f *Family[E]) label() string {
	if f.Label != "" {
		return f.Label
	}
	return f.Name
}

func forms[E any](fs []Family[E]) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.form("-")
	}
	return out
}

// form is the family's spelling with sep before a K placeholder.
func (f *Family[E]) form(sep string) string {
	if f.Arg == "" {
		return f.Name
	}
	return f.Name + sep + "K"
}

func (r *registry[E]) register(f Family[E]) {
	if f.Name == "" || f.New == nil {
		panic(fmt.Sprintf("access: a %s family needs a name and a constructor", r.what))
	}
	if f.Arg != "" && f.MinK < 1 {
		f.MinK = 1
	}
	if f.Label != "" && f.Label != f.Name && !slices.Contains(f.Aliases, f.Label) {
		panic(fmt.Sprintf("access: %s %s: its label %q is not one of its names", r.what, f.Name, f.Label))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range append([]string{f.Name}, f.Aliases...) {
		if g, _ := r.lookup(n); g != nil {
			panic(fmt.Sprintf("access: %s %q registered twice (%s and %s)", r.what, n, g.Name, f.Name))
		}
	}
	r.families = append(r.families, &f)
}

func (r *registry[E]) lookup(name string) (*Family[E], bool) {
	for _, f := range r.families {
		if f.Name == name || slices.Contains(f.Aliases, name) {
			return f, true
		}
	}
	return nil, false
}

func (r *registry[E]) list() []Family[E] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Family[E], len(r.families))
	for i, f := range r.families {
		out[i] = *f
	}
	slices.SortFunc(out, func(a, b Family[E]) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// parse finds spec's family and K: "name", "name:K" or "name-K", name a
// family's name or alias.
func (r *registry[E]) parse(spec string) (*Family[E], Spec, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	stem, arg, hasArg := strings.Cut(spec, ":")
	f, ok := r.lookup(stem)
	if !ok && !hasArg {
		if i := strings.LastIndexByte(spec, '-'); i > 0 {
			if g, found := r.lookup(spec[:i]); found && g.Arg != "" {
				f, ok, stem, arg, hasArg = g, true, spec[:i], spec[i+1:], true
			}
		}
	}
	fail := func(unknown bool, format string, a ...any) (*Family[E], Spec, error) {
		return nil, Spec{}, &SpecError{What: r.what, Spec: spec, Reason: fmt.Sprintf(format, a...), Unknown: unknown, Valid: r.valid()}
	}
	if !ok {
		return fail(true, "unknown %s (valid: %s)", r.what, r.valid())
	}
	s := Spec{Name: f.Name, Family: f.Name, Random: f.Random, Needs: f.Needs, label: f.label()}
	switch {
	case f.Arg == "" && hasArg:
		return fail(false, "%s takes no K", f.Name)
	case f.Arg == "":
		return f, s, nil
	case !hasArg:
		return fail(false, "%s needs %s (K): %s or %s", stem, f.Arg, f.form("-"), f.form(":"))
	}
	k, err := strconv.Atoi(arg)
	switch {
	case (err != nil || k < 1) && f.MinK == 1:
		return fail(false, "K must be an integer ≥ 1 (%s)", f.Arg)
	case err != nil || k < f.MinK:
		return fail(false, "K must be an integer: %s needs K ≥ %d (%s)", f.Name, f.MinK, f.Arg)
	}
	s.K, s.Name = k, f.Name+"-"+strconv.Itoa(k)
	return f, s, nil
}

// spec is the spec of family (a name or alias) with argument k.
func (r *registry[E]) spec(family string, k int) (Spec, error) {
	r.mu.RLock()
	_, ok := r.lookup(family)
	r.mu.RUnlock()
	if !ok {
		valid := r.spellings()
		return Spec{}, &SpecError{What: r.what, Spec: family, Reason: fmt.Sprintf("unknown %s family (valid: %s)", r.what, valid), Unknown: true, Valid: valid}
	}
	spec := family
	if k != 0 {
		spec += ":" + strconv.Itoa(k)
	}
	_, s, err := r.parse(spec)
	return s, err
}

// valid lists the canonical spellings and then the other accepted ones.
func (r *registry[E]) valid() string {
	var names, aliases []string
	for _, f := range r.families {
		names = append(names, f.form("-"))
		if f.Arg != "" {
			aliases = append(aliases, f.form(":"))
		}
		for _, a := range f.Aliases {
			aliases = append(aliases, (&Family[E]{Name: a, Arg: f.Arg}).form(":"))
		}
	}
	slices.Sort(names)
	slices.Sort(aliases)
	out := strings.Join(names, ", ")
	if len(aliases) > 0 {
		out += "; also " + strings.Join(aliases, ", ")
	}
	return out
}

func (r *registry[E]) build(spec string, env Env) (E, error) {
	var zero E
	f, s, err := r.parse(spec)
	if err != nil {
		return zero, err
	}
	if err := checkNeeds(s, env.Net); err != nil {
		return zero, err
	}
	e, err := f.New(s.K, env)
	if err != nil {
		return zero, fmt.Errorf("access: %s: %w", s.Name, err)
	}
	return e, nil
}

// checkNeeds reports a missing network of the spec's family.
func checkNeeds(s Spec, n *Net) error {
	switch {
	case s.Needs == 0:
		return nil
	case n == nil:
		return fmt.Errorf("access: %s needs a network (Env.Net)", s.Name)
	case s.Needs&NeedsT != 0 && n.T == nil:
		return fmt.Errorf("access: %s needs a DF-TM network (Net.T)", s.Name)
	case s.Needs&NeedsNu != 0 && n.Nu == nil:
		return fmt.Errorf("access: %s needs a centred DF-TM network (Net.Nu)", s.Name)
	}
	return nil
}
