package mnist

import (
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"

	"github.com/dfx-lab/dfx/dfx/plotx"
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
