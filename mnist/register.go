package mnist

import (
	"context"
	"fmt"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
)

// CheckNets checks that dir ("" for the committed networks) holds every
// network of Specs, each a valid checkpoint for its spec.
func CheckNets(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("networks folder %s is not a folder", dir)
	}
	for _, s := range Specs() {
		if _, _, err := LoadNetwork(dir, s.Name); err != nil {
			return fmt.Errorf("networks folder %s: %w", dir, err)
		}
	}
	return nil
}

// checkDataNets checks the data and s.NetsDir.
func checkDataNets(s report.Settings) error {
	if err := CheckData(); err != nil {
		return err
	}
	return CheckNets(s.NetsDir)
}

func checkData(report.Settings) error { return CheckData() }

func init() {
	report.RegisterLegacy(report.Legacy{
		Name:  "mnist",
		Doc:   "paper Table 1, Figures 1–2 on MNIST, and every estimator against the exact Fisher of the 60 000 training images (committed networks)",
		Check: checkDataNets,
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			cfg := For(c.Profile)
			cfg.NetsDir = c.Settings.NetsDir
			res, err := Run(ctx, cfg, c.LogWriter())
			if err == nil {
				fmt.Fprintf(c.LogWriter(), "mnist: computed in %.1fs\n", res.Elapsed.Seconds())
			}
			return report.One(res, err)
		},
	})
}
