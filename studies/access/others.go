package toys

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/dfx-lab/dfx/dfx/report"
)

// OthersFull is the profile of the other data sets (8 Gaussians, moons,
// rings, swiss roll): the Table 2 pipeline with one training seed and
// shorter training, checkpoints under toys/checkpoints.
func OthersFull(dataset string) Config {
	c := Full()
	c.Dataset = dataset
	c.Train.Steps = 3000
	c.TrainSeeds, c.EvalSeeds = []uint64{1}, []uint64{1}
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

// OtherDatasets lists the generators other than the paper's checkerboard.
func OtherDatasets() []string {
	var out []string
	for n := range Generators {
		if n != "checkerboard" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// RunOthers runs the Table 2 pipeline on every other data set (OthersFor
// p, with the settings' retraining); each result's report is named after
// its data set.
func RunOthers(ctx context.Context, p report.Profile, s report.Settings, log io.Writer) ([]*Result, error) {
	var out []*Result
	for _, name := range OtherDatasets() {
		cfg := withSettings(OthersFor(p, name), s)
		res, err := Run(ctx, cfg, log)
		if err != nil {
			return nil, fmt.Errorf("toys %s: %w", name, err)
		}
		if log != nil {
			fmt.Fprintf(log, "toys: %s done in %.1fs\n", name, res.Elapsed.Seconds())
		}
		out = append(out, res)
	}
	return out, nil
}
