package report

import (
	"context"
	"io"
)

// Settings, Config and Legacy are the harness before every experiment had
// a configuration of its own; they go as the experiments move to Spec.
type Settings struct {
	NetsDir       string
	Model         string
	ModelWork     string
	ModelParts    string
	DensityWork   string
	DensityShard  string
	CandidatesDir string
	Retrain       bool
}

// Config is a legacy experiment's configuration: a profile and settings.
type Config struct {
	Profile  Profile
	Settings Settings
	Log      io.Writer
}

// LogWriter is c.Log, or a writer that discards.
func (c Config) LogWriter() io.Writer { return Env{Log: c.Log}.LogWriter() }

// Legacy is an experiment registered with settings instead of a
// configuration of its own.
type Legacy struct {
	Name       string
	Doc        string
	Standalone bool
	Check      func(Settings) error
	Run        func(ctx context.Context, cfg Config) ([]Result, error)
}

// RegisterLegacy registers e as a Spec[Config].
func RegisterLegacy(e Legacy) {
	Register(Spec[Config]{
		Name: e.Name, Doc: e.Doc, Standalone: e.Standalone,
		Quick: func() Config { return Config{Profile: Quick} },
		Full:  func() Config { return Config{Profile: Full} },
		Check: func(c Config, _ Env) error {
			if e.Check == nil {
				return nil
			}
			return e.Check(c.Settings)
		},
		Run: func(ctx context.Context, c Config, env Env) (Result, error) {
			c.Log = env.Log
			rs, err := e.Run(ctx, c)
			if err != nil {
				return nil, err
			}
			if len(rs) == 1 {
				return rs[0], nil
			}
			return Parts(rs), nil
		},
	})
}

// One wraps a single result as a legacy Run's list.
func One[R Result](r R, err error) ([]Result, error) {
	if err != nil {
		return nil, err
	}
	return []Result{r}, nil
}
