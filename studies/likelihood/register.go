package likelihood

import (
	"context"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
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
		Check: func(_ Config, env report.Env) error {
			if err := mnist.CheckData(); err != nil {
				return err
			}
			return mnist.CheckNets(env.Nets)
		},
		Run: func(ctx context.Context, c Config, env report.Env) (report.Result, error) {
			res, err := Run(ctx, mnist.Problem(), env.Nets, c, env.LogWriter())
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(env.LogWriter(), "mnist: computed in %.1fs\n", res.Elapsed.Seconds())
			return res, nil
		},
	})
}
