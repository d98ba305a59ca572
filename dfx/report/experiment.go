package report

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Profile is an experiment's size. Every experiment has exactly these two.
type Profile string

const (
	// Full is the profile of the committed figures and tables.
	Full Profile = "full"
	// Quick is minutes: small grids, few seeds, short trainings. It checks
	// that the pipeline runs; its numbers are not the committed ones.
	Quick Profile = "quick"
)

// ParseProfile reads "full" or "quick".
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(s); p {
	case Full, Quick:
		return p, nil
	}
	return "", fmt.Errorf("profile %q, want %q or %q", s, Full, Quick)
}

// Pick is the configuration of profile p: quick() under Quick, full()
// otherwise.
func Pick[C any](p Profile, quick, full func() C) C {
	if p == Quick {
		return quick()
	}
	return full()
}

// Env is what an experiment may know of its surroundings. No experiment
// reads the process environment: the caller fills Env in — the CLI from
// its flags and DFX_* variables, a notebook through dfx/notebook, a test
// by hand. The zero value runs on the committed networks, keeps no work
// and discards the log.
type Env struct {
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Nets is the folder of networks written by `dfx train` ("": the
	// problem's committed networks).
	Nets string
	// Work is the folder where a resumable experiment keeps (and finds) its
	// finished parts ("": none kept).
	Work string
}

// LogWriter is e.Log, or a writer that discards.
func (e Env) LogWriter() io.Writer {
	if e.Log == nil {
		return io.Discard
	}
	return e.Log
}

// Spec describes an experiment whose configuration has type C: the one
// signature every experiment has, Run(ctx, C, Env), its two profiles, and
// its own knobs. Register it; the CLI, the notebooks and the tests run it
// through the registry.
type Spec[C any] struct {
	Name string
	// Doc is one line for `dfx reproduce -h`.
	Doc string
	// Standalone experiments are left out of `all` and run by name: they
	// read what a researcher's own runs left behind, or their full profile
	// takes hours.
	Standalone bool
	// Quick and Full are the configurations of the two profiles.
	Quick, Full func() C
	// Flags, if not nil, binds the experiment's own knobs in c to fs
	// (`dfx reproduce NAME -knob value`).
	Flags func(fs *flag.FlagSet, c *C)
	// Check, if not nil, validates c and env before any work (cheap: no
	// training, no experiment); its error is bad input.
	Check func(c C, env Env) error
	// Run computes the experiment.
	Run func(ctx context.Context, c C, env Env) (Result, error)
}

// Job is one configured run of an experiment: its configuration at a
// profile, with the knobs bound to a flag set, ready to check and run.
type Job interface {
	// Config is a pointer to the configuration (type *C of the Spec).
	Config() any
	Check(env Env) error
	Run(ctx context.Context, env Env) (Result, error)
}

// Experiment is a registered experiment, its configuration's type erased.
type Experiment struct {
	Name       string
	Doc        string
	Standalone bool
	configure  func(p Profile, fs *flag.FlagSet) Job
}

// Configure returns the experiment's job at profile p, its knobs bound to
// fs (nil: not bound).
func (e Experiment) Configure(p Profile, fs *flag.FlagSet) Job { return e.configure(p, fs) }

type job[C any] struct {
	spec *Spec[C]
	cfg  C
}

func (j *job[C]) Config() any { return &j.cfg }

func (j *job[C]) Check(env Env) error {
	if j.spec.Check == nil {
		return nil
	}
	return j.spec.Check(j.cfg, env)
}

func (j *job[C]) Run(ctx context.Context, env Env) (Result, error) {
	return j.spec.Run(ctx, j.cfg, env)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Experiment{}
)

// Register adds s to the registry; experiment packages call it from their
// init functions. A duplicate name, an empty name, a missing profile or a
// nil Run panics: it is a programming error, found by any test of the
// package.
func Register[C any](s Spec[C]) {
	if s.Name == "" || s.Run == nil || s.Quick == nil || s.Full == nil {
		panic(fmt.Sprintf("report.Register: experiment %q without a name, a profile or a Run", s.Name))
	}
	spec := s
	add(Experiment{Name: s.Name, Doc: s.Doc, Standalone: s.Standalone, configure: func(p Profile, fs *flag.FlagSet) Job {
		j := &job[C]{spec: &spec, cfg: Pick(p, spec.Quick, spec.Full)}
		if fs != nil && spec.Flags != nil {
			spec.Flags(fs, &j.cfg)
		}
		return j
	}})
}

// AsResult is a study's (result, error) as a Spec's Run returns them: nil
// and err on failure, so that a failed run's nil pointer never reaches the
// caller as a non-nil Result. A Run that only calls its study is
// `return report.AsResult(Run(ctx, c))`.
func AsResult[R Result](r R, err error) (Result, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

func add(e Experiment) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[e.Name]; dup {
		panic(fmt.Sprintf("report.Register: experiment %q registered twice", e.Name))
	}
	registry[e.Name] = e
}

// Lookup returns the registered experiment name.
func Lookup(name string) (Experiment, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	e, ok := registry[name]
	return e, ok
}

// Experiments lists the registered experiments by name (those of the
// packages the program imports).
func Experiments() []Experiment {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Experiment, 0, len(registry))
	for _, e := range registry {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Parts is a result made of several reports, each written into its own
// folder <out>/<experiment>/<report name> and shown in turn.
type Parts []Result

// Report is the parts merged into one report, for a caller that wants one.
func (ps Parts) Report() (*Report, error) {
	var rs []*Report
	for _, p := range ps {
		r, err := p.Report()
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("report: no parts")
	}
	return Merge(rs[0].Name, rs[0].Title, rs...), nil
}

// Split is r's parts: r itself unless it is Parts.
func Split(r Result) []Result {
	if ps, ok := r.(Parts); ok {
		return ps
	}
	return []Result{r}
}

// Merge joins reports into one named name (tables, figures and files in
// order); Check reports any file name two of them share.
func Merge(name, title string, rs ...*Report) *Report {
	out := &Report{Name: name, Title: title}
	for _, r := range rs {
		out.Tables = append(out.Tables, r.Tables...)
		out.Figures = append(out.Figures, r.Figures...)
		out.Files = append(out.Files, r.Files...)
	}
	return out
}
