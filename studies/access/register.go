// Package access is the access-comparison study: every trace estimator and
// Fisher product of dfx/access scored against the exact answer, with its
// error and its cost, on any problem whose exact reference is known — the
// d = 64 and 2-D Dirac mixtures (`access`), the toy data sets (Table 2:
// `toys`, `toys-others`), the exact fields of a 2-D mixture (`fields`) and
// a Gaussian mixture fitted to MNIST run as a network (`mnist-exact-model`).
package access

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/toys"
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

// withRetrain applies a -retrain knob: retrain, and (for a configuration on
// the committed checkpoints) write the new ones into toys.RetrainDir.
func withRetrain(cfg Config, retrain bool) Config {
	if !retrain {
		return cfg
	}
	cfg.Retrain = true
	if cfg.Embedded {
		cfg.Checkpoints = toys.RetrainDir
	}
	return cfg
}

// checkRetrain checks that a retraining can rewrite toys.RetrainDir.
func checkRetrain(retrain bool) error {
	if !retrain {
		return nil
	}
	if st, err := os.Stat(toys.RetrainDir); err != nil || !st.IsDir() {
		return fmt.Errorf("toys: retraining (-retrain, DFX_RETRAIN=1) rewrites %s: run from the repository root", toys.RetrainDir)
	}
	return nil
}

// retrainSpec is a Table 2 experiment whose configuration C has a -retrain
// knob at retrain(c): the knob bound and checked, and run given the log.
func retrainSpec[C any](name, doc string, quick, full func() C, retrain func(c *C) *bool,
	run func(ctx context.Context, c C, log io.Writer) (report.Result, error)) report.Spec[C] {
	return report.Spec[C]{Name: name, Doc: doc, Quick: quick, Full: full,
		Flags: func(fs *flag.FlagSet, c *C) {
			r := retrain(c)
			fs.BoolVar(r, "retrain", *r,
				"retrain instead of loading the committed checkpoints, and rewrite "+toys.RetrainDir+" (run from the repository root)")
		},
		Check: func(c C, _ report.Env) error { return checkRetrain(*retrain(&c)) },
		Run: func(ctx context.Context, c C, env report.Env) (report.Result, error) {
			return run(ctx, c, env.LogWriter())
		},
	}
}

// runToys is Run with c's -retrain knob applied, as a report.Result.
func runToys(ctx context.Context, c Config, log io.Writer) (report.Result, error) {
	res, err := Run(ctx, withRetrain(c, c.Retrain), log)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "toys: computed in %.1fs\n", res.Elapsed.Seconds())
	return res, nil
}

// runOthers is RunOthers, its results as the parts of one report.Result.
func runOthers(ctx context.Context, c OthersConfig, log io.Writer) (report.Result, error) {
	rs, err := RunOthers(ctx, c, log)
	if err != nil {
		return nil, err
	}
	out := make(report.Parts, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out, nil
}

func init() {
	report.Register(retrainSpec("toys", "paper Table 2 on the toy data set (full: committed checkpoints, trains what is missing)",
		Quick, Full, func(c *Config) *bool { return &c.Retrain }, runToys))
	report.Register(retrainSpec("toys-others", "the Table 2 pipeline on every other toy data set",
		OthersQuickConfig, OthersFullConfig, func(c *OthersConfig) *bool { return &c.Retrain }, runOthers))
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
	report.Register(report.Spec[AccessAllConfig]{
		Name: "access", Doc: "access comparison: exact vs VJP / Hutchinson / DF-TM / DF-EA traces and products, d = 64 and the plane",
		Quick: AccessAllQuick, Full: AccessAllFull,
		Run: func(ctx context.Context, c AccessAllConfig, env report.Env) (report.Result, error) {
			return report.AsResult(RunAccessAll(ctx, c, env.LogWriter()))
		},
	})
	report.Register(report.Spec[ExactModelConfig]{
		Name: "mnist-exact-model",
		Doc: "every trace estimator and Fisher product on an image-scale model whose Fisher is known exactly: " +
			"a Gaussian mixture fitted to MNIST, run as a network",
		Quick: ExactModelQuick, Full: ExactModelFull,
		Check: func(ExactModelConfig, report.Env) error { return mnist.CheckData() },
		Run: func(ctx context.Context, c ExactModelConfig, env report.Env) (report.Result, error) {
			return report.AsResult(RunExactModel(ctx, c, env.LogWriter()))
		},
	})
}
