package mnist

import (
	"context"
	"io"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/progress"
	dfxtiming "github.com/dfx-lab/dfx/internal/timing"
	"github.com/dfx-lab/dfx/problem"
)

// The helpers MNIST's experiments share, on 28×28 images; each is the
// library's (or internal's) general one.

// ImageGrid is plotx.ImageGrid of 28×28 images.
func ImageGrid(title, xlabel, ylabel string, rows [][]*mat.Dense, values [][]float64) (*plot.Plot, error) {
	return plotx.ImageGrid(title, xlabel, ylabel, 28, 28, rows, values)
}

// LabelRows names the rows of an ImageGrid plot, top row first.
func LabelRows(p *plot.Plot, names []string) { plotx.LabelRows(p, names) }

// gridStripScale is how much taller a row of ImageGrid is with its value strip.
var gridStripScale = plotx.ImageRowScale(28)

// imageRow is plotx.ImageRows of 28×28 images.
func imageRow(title, xlabel string, rowNames []string, rows [][]*mat.Dense, values [][]float64, format string) ([]byte, error) {
	return plotx.ImageRows(title, xlabel, rowNames, 28, 28, rows, values, format)
}

func rowsOf(x *mat.Dense) []*mat.Dense { return plotx.SplitRows(x) }

func median(v []float64) float64 { return dfxtiming.Median(v) }

func stepLogger(ctx context.Context, log io.Writer, prefix string) func(name string, f func() error) error {
	return progress.Steps(ctx, log, prefix)
}

// nearestDistance is min_i ‖x − y_i‖ for each row of x.
func nearestDistance(y, x *mat.Dense) []float64 { return problem.NearestDistance(y, x) }

func percent(name, key string) report.Column { return report.Percent(name, key) }

func millis(name, key string) report.Column { return report.Millis(name, key) }
