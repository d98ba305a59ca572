package toys

import (
	"context"
	"fmt"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
)

// For is Quick or Full.
func For(p report.Profile) Config { return report.Pick(p, Quick, Full) }

// OthersFor is OthersQuick or OthersFull.
func OthersFor(p report.Profile, dataset string) Config {
	if p == report.Quick {
		return OthersQuick(dataset)
	}
	return OthersFull(dataset)
}

// FieldsFor is FieldsQuick or FieldsFull.
func FieldsFor(p report.Profile) FieldsConfig { return report.Pick(p, FieldsQuick, FieldsFull) }

// AccessPlaneFor is AccessPlaneQuick or AccessPlaneFull.
func AccessPlaneFor(p report.Profile) AccessConfig {
	return report.Pick(p, AccessPlaneQuick, AccessPlaneFull)
}

// RetrainDir is the folder Settings.Retrain rewrites, relative to the
// working directory (the repository root).
const RetrainDir = "toys/checkpoints"

// withSettings applies s.Retrain: retrain, and (for a configuration on the
// committed checkpoints) write the new ones into RetrainDir.
func withSettings(cfg Config, s report.Settings) Config {
	if !s.Retrain {
		return cfg
	}
	cfg.Retrain = true
	if cfg.Embedded {
		cfg.Checkpoints = RetrainDir
	}
	return cfg
}

// checkSettings checks that Retrain can rewrite RetrainDir.
func checkSettings(s report.Settings) error {
	if !s.Retrain {
		return nil
	}
	if st, err := os.Stat(RetrainDir); err != nil || !st.IsDir() {
		return fmt.Errorf("toys: retraining rewrites %s: run from the repository root", RetrainDir)
	}
	return nil
}

func init() {
	report.RegisterLegacy(report.Legacy{
		Name: "toys", Doc: "paper Table 2 on the toy data set (full: committed checkpoints, trains what is missing)",
		Check: checkSettings,
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			res, err := Run(ctx, withSettings(For(c.Profile), c.Settings), c.LogWriter())
			if err == nil {
				fmt.Fprintf(c.LogWriter(), "toys: computed in %.1fs\n", res.Elapsed.Seconds())
			}
			return report.One(res, err)
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name: "toys-others", Doc: "the Table 2 pipeline on every other toy data set",
		Check: checkSettings,
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			rs, err := RunOthers(ctx, c.Profile, c.Settings, c.LogWriter())
			if err != nil {
				return nil, err
			}
			out := make([]report.Result, len(rs))
			for i, r := range rs {
				out[i] = r
			}
			return out, nil
		},
	})
	report.Register(report.Spec[FieldsConfig]{
		Name: "fields", Doc: "quick-start: exact trace and score fields of a 2-D mixture",
		Quick: FieldsQuick, Full: FieldsFull,
		Run: func(ctx context.Context, c FieldsConfig, env report.Env) (report.Result, error) {
			r, err := RunFields(ctx, c)
			if err != nil {
				return nil, err
			}
			for _, s := range r.Summaries() {
				fmt.Fprintf(env.LogWriter(), "  t=%-5g σ=%-7.3g tr F ∈ [%.4g, %.4g], negative on %.1f%% of the grid\n",
					s.T, s.Sigma, s.MinTrace, s.MaxTrace, 100*s.NegativeFraction)
			}
			return r, nil
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name: "access", Doc: "access comparison: exact vs VJP / Hutchinson / DF-TM / DF-EA traces and products, d = 64 and the plane",
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			return report.One(RunAccessAll(ctx, c.Profile, c.LogWriter()))
		},
	})
}
