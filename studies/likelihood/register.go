package likelihood

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/models/onnximport"
	"github.com/dfx-lab/dfx/problem"

	"gonum.org/v1/gonum/mat"
)

// MNIST is the study's configuration on MNIST at profile p: `dfx
// reproduce mnist`, beside FFJORD's published test bpd (Grathwohl et al.
// 2019, Table 2).
func MNIST(p report.Profile) Config {
	c := report.Pick(p, Quick, Full)
	c.Name, c.Data, c.Anchor, c.AnchorBPD = "mnist", "MNIST", "FFJORD", 0.99
	return c
}

func init() {
	report.Register(report.Spec[Config]{
		Name: "mnist",
		Doc: "paper Table 1, Figures 1–2 on MNIST, and every estimator against the exact Fisher of the 60 000 training images " +
			"(committed networks)",
		Quick: func() Config { return MNIST(report.Quick) },
		Full:  func() Config { return MNIST(report.Full) },
		Flags: func(fs *flag.FlagSet, c *Config) {
			fs.StringVar(&c.Checkpoint, "checkpoint", c.Checkpoint, "an ε-network imported by dfx import, studied instead of the committed ones "+
				"(its t_θ and ν_θ from -nets, as dfx train dftm|dftm-c -eps writes them; ν_θ is optional)")
			fs.Func("parts", "the parts to compute, comma-separated "+strings.Join(Parts, ",")+" (default all)", func(v string) (err error) {
				c.Parts, err = ParseParts(v)
				return err
			})
			fs.IntVar(&c.TruthQueries, "truth-queries", c.TruthQueries, "queries per split and time of the exact-Fisher part")
			fs.BoolVar(&c.ExactAt64, "exact-at-64", c.ExactAt64, "time the exact VJP trace at batch 64 too (one round, ≈ 50 000 VJPs)")
		},
		Check: func(c Config, env report.Env) error {
			if err := mnist.CheckData(); err != nil {
				return err
			}
			test, err := mnist.Load(mnist.Test)
			if err != nil {
				return err
			}
			if n := len(test.Labels); c.TruthQueries < 1 || c.TruthQueries > n {
				return fmt.Errorf("-truth-queries must be in [1, %d] (the test images), have %d", n, c.TruthQueries)
			}
			if c.Checkpoint != "" {
				return checkImported(c, env.Nets)
			}
			return mnist.CheckNets(env.Nets)
		},
		Run: func(ctx context.Context, c Config, env report.Env) (report.Result, error) {
			p, err := importedMNIST(ctx, c.Checkpoint, true)
			if err != nil {
				return nil, err
			}
			res, err := Run(ctx, p, env.Nets, c, env.LogWriter())
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(env.LogWriter(), "mnist: computed in %.1fs\n", res.Elapsed.Seconds())
			return res, nil
		},
	})
}

// importedMNIST is the MNIST problem ("" file: mnist.Problem) or, with
// the file of an ε-network imported by dfx import, the problem of MNIST's
// images and that network (onnximport.NewProblem), whose training images
// are loaded only when load is set (Check reads the network alone).
func importedMNIST(ctx context.Context, file string, load bool) (*problem.Problem, error) {
	p := mnist.Problem()
	if file == "" {
		return p, nil
	}
	eps, err := checkpoint.Read(file)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var train, test = mat.NewDense(2, p.Dim, nil), mat.NewDense(1, p.Dim, nil)
	if load {
		if train, err = p.Train(ctx); err != nil {
			return nil, err
		}
		if test, err = p.Test(ctx); err != nil {
			return nil, err
		}
	}
	ip, err := onnximport.NewProblem(onnximport.Data{Name: p.Name, Eps: eps, Train: train, Test: test, Levels: p.Image.Levels})
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", file, err)
	}
	return ip, nil
}

// checkImported checks, before any work, a run on an imported ε-network:
// it loads with the t_θ (and ν_θ) of the folder nets, and the parts
// asked for do not need the committed networks' classes.
func checkImported(c Config, nets string) error {
	p, err := importedMNIST(context.Background(), c.Checkpoint, false)
	if err != nil {
		return err
	}
	if c.part(PartGuidance) || c.part(PartFig2) {
		return fmt.Errorf("-checkpoint: the %s and %s parts sample classes with the committed networks and classifier; "+
			"choose others with -parts (e.g. %s,%s)", PartGuidance, PartFig2, PartTiming, PartTruth)
	}
	if nets == "" {
		return fmt.Errorf("-checkpoint needs -nets DIR holding the t_θ trained for it (dfx train dftm -eps %s -data POINTS -out DIR)", c.Checkpoint)
	}
	nw, err := p.Networks(context.Background(), nets)
	if err != nil {
		return err
	}
	if nw.Net.T == nil {
		return fmt.Errorf("-nets %s holds no %s for the ε-network %s (dfx train dftm -eps %s -data POINTS -out %s)",
			nets, onnximport.TraceFile, c.Checkpoint, c.Checkpoint, nets)
	}
	return nil
}
