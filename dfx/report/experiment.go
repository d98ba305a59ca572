package report

import (
	"context"
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
// otherwise. Each experiment package's XFor(p) is Pick(p, XQuick, XFull).
func Pick[C any](p Profile, quick, full func() C) C {
	if p == Quick {
		return quick()
	}
	return full()
}

// Settings is what an experiment may need to know of its surroundings.
// No experiment reads the environment: the caller fills these in — the
// CLI from its flags and DFX_* variables, a notebook through dfx/notebook,
// a test by hand. The zero value runs on the committed networks and
// checkpoints.
type Settings struct {
	// NetsDir is the folder of the MNIST networks written by `dfx train`
	// ("": the committed mnist/checkpoints).
	NetsDir string
	// Model is the ε-network mnist-model evaluates, a network or candidate
	// name ("": eps).
	Model string
	// ModelWork is the folder where mnist-model keeps (and finds) its
	// expensive parts, the likelihood and the samples ("": none kept).
	ModelWork string
	// ModelParts are the parts mnist-model computes: likelihood, samples,
	// quality, comma-separated ("" or "all": all three).
	ModelParts string
	// DensityWork is the folder where mnist-density keeps (and finds) its
	// finished rows and the network's levels ("": none kept).
	DensityWork string
	// DensityShard is "k/n" for a shard of mnist-density's rows (computed
	// beside other shards on one DensityWork folder; a partial report), ""
	// for the whole run.
	DensityShard string
	// CandidatesDir is the folder of candidate ε-networks' checkpoints or
	// training states mnist-candidates reads ("": dfx-nets).
	CandidatesDir string
	// Retrain makes the toy experiments retrain their networks instead of
	// loading the committed checkpoints, and rewrite toys/checkpoints under
	// the working directory.
	Retrain bool
}

// Config is one run of an experiment.
type Config struct {
	Profile  Profile
	Settings Settings
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// LogWriter is c.Log, or a writer that discards.
func (c Config) LogWriter() io.Writer {
	if c.Log == nil {
		return io.Discard
	}
	return c.Log
}

// Experiment is one registered experiment: `dfx reproduce NAME`, a
// notebook's notebook.Run(NAME) and the tests all run it through Run.
type Experiment struct {
	Name string
	// Doc is one line for `dfx reproduce -h`.
	Doc string
	// Standalone experiments are left out of `all`: they read what a
	// researcher's own runs left behind, or train networks of their own.
	Standalone bool
	// Check, if not nil, validates the settings before any work (cheap: no
	// training, no experiment); its error is bad input.
	Check func(Settings) error
	// Run computes the experiment. One result is written into
	// <out>/<Name>; several into <out>/<Name>/<report name> each.
	Run func(ctx context.Context, cfg Config) ([]Result, error)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Experiment{}
)

// Register adds e to the registry; experiment packages call it from their
// init functions. A duplicate name, an empty name or a nil Run panics: it
// is a programming error, found by any test of the package.
func Register(e Experiment) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if e.Name == "" || e.Run == nil {
		panic(fmt.Sprintf("report.Register: experiment %q without a name or a Run", e.Name))
	}
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
// packages the program imports: toys, ot, mnist).
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

// One wraps a single result as Run's list.
func One[R Result](r R, err error) ([]Result, error) {
	if err != nil {
		return nil, err
	}
	return []Result{r}, nil
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
