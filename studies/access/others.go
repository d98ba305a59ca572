package access

import (
	"context"
	"fmt"
	"io"

	"github.com/dfx-lab/dfx/toys"
)

// OthersFull is the profile of the other data sets (8 Gaussians, moons,
// rings, swiss roll): the Table 2 pipeline with one training seed and
// shorter training, on their committed checkpoints (toys.Published).
func OthersFull(dataset string) Config {
	c := Full()
	c.ProblemConfig = toys.Published(dataset)
	c.EvalSeeds = []uint64{1}
	c.EvalPoints, c.NLLPoints = 500, 100
	c.CurveTimes, c.HeatGrid, c.Samples = 11, 60, 2000
	return c
}

// OthersQuick is OthersFull at the Quick profile's size.
func OthersQuick(dataset string) Config {
	c := Quick()
	c.Dataset = dataset
	c.EvalSeeds, c.CurveTimes = []uint64{1}, 6
	return c
}

// OthersConfig is the Table 2 pipeline on every other data set, one
// configuration each (OthersFull or OthersQuick of toys.OtherDatasets).
type OthersConfig struct {
	Runs []Config
	// Retrain retrains every run's networks and rewrites the committed
	// ones (withRetrain).
	Retrain bool
}

// OthersFullConfig and OthersQuickConfig are the two profiles.
func OthersFullConfig() OthersConfig  { return othersOf(OthersFull) }
func OthersQuickConfig() OthersConfig { return othersOf(OthersQuick) }

func othersOf(profile func(string) Config) OthersConfig {
	var c OthersConfig
	for _, name := range toys.OtherDatasets() {
		c.Runs = append(c.Runs, profile(name))
	}
	return c
}

// RunOthers runs the Table 2 pipeline on every run of c; each result's
// report is named after its data set.
func RunOthers(ctx context.Context, c OthersConfig, log io.Writer) ([]*Result, error) {
	var out []*Result
	for _, cfg := range c.Runs {
		res, err := Run(ctx, withRetrain(cfg, c.Retrain), log)
		if err != nil {
			return nil, fmt.Errorf("toys %s: %w", cfg.Dataset, err)
		}
		if log != nil {
			fmt.Fprintf(log, "toys: %s done in %.1fs\n", cfg.Dataset, res.Elapsed.Seconds())
		}
		out = append(out, res)
	}
	return out, nil
}
