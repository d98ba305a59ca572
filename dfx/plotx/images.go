package plotx

import (
	"fmt"
	"image"
	"image/color"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Image grids: rows of h×w grey images (values in [−1, 1], black = −1),
// each image a [1, h·w] row, with grey gaps and, optionally, a value
// printed under each image on a white strip of its own.
const (
	gridGap   = 2  // grey pixels between images
	gridStrip = 11 // pixel rows of the white strip under an image that carries a value
)

// ImageRowScale is how much taller a row of an ImageGrid of h-pixel images
// is with its value strip than without: (h + gap + strip)/(h + gap).
func ImageRowScale(h int) float64 { return float64(h+gridGap+gridStrip) / float64(h+gridGap) }

// ImageGrid draws rows of h×w images as one picture with labelled axes:
// column k is rank k+1, row r is class r (top row first). values, if not
// nil, are printed under each image, black on a white strip of its own
// (not over the image), at a legible size; callers give such a grid
// ImageRowScale(h) times the height per row.
func ImageGrid(title, xlabel, ylabel string, h, w int, rows [][]*mat.Dense, values [][]float64) (*plot.Plot, error) {
	nr, nc := len(rows), 0
	for _, r := range rows {
		nc = max(nc, len(r))
	}
	if nr == 0 || nc == 0 || h < 1 || w < 1 {
		return nil, fmt.Errorf("plotx: empty image grid")
	}
	strip := 0 // pixel rows under each image for its value
	if values != nil {
		strip = gridStrip
	}
	cellW, cellH := w+gridGap, h+gridGap+strip
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.Add(plotter.NewImage(drawImages(rows, h, w, strip, nc), 0, 0, float64(nc), float64(nr)))
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, float64(nc), 0, float64(nr)
	var xt, yt []plot.Tick
	for c := range nc {
		xt = append(xt, plot.Tick{Value: float64(c) + 0.5, Label: fmt.Sprint(c + 1)})
	}
	for r := range nr {
		yt = append(yt, plot.Tick{Value: float64(nr-1-r) + 0.5, Label: fmt.Sprint(r)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
	if values == nil {
		return p, nil
	}
	var xys plotter.XYs
	var labels []string
	for r, vs := range values {
		for c, v := range vs {
			// the strip's middle, in row units (a row is cellH pixels, top down)
			mid := float64(gridGap+strip/2) / float64(cellH)
			xys = append(xys, plotter.XY{X: float64(c) + float64(w)/float64(2*cellW), Y: float64(nr-1-r) + mid})
			labels = append(labels, fmt.Sprintf("%.2f", v))
		}
	}
	lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].Font.Size = vg.Points(8)
		lab.TextStyle[i].Color = color.Black
		lab.TextStyle[i].XAlign, lab.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
	}
	p.Add(lab)
	return p, nil
}

// drawImages paints the images of rows on grey, each h×w tile followed by
// strip white pixel rows.
func drawImages(rows [][]*mat.Dense, h, w, strip, nc int) *image.Gray {
	cellW, cellH := w+gridGap, h+gridGap+strip
	img := image.NewGray(image.Rect(0, 0, nc*cellW, len(rows)*cellH))
	for i := range img.Pix {
		img.Pix[i] = 128 // grey gaps
	}
	for r, row := range rows {
		for c := range row {
			for y := h; y < h+strip; y++ {
				for x := range w {
					img.SetGray(c*cellW+x, r*cellH+y, color.Gray{Y: 255})
				}
			}
		}
		for c, im := range row {
			data := im.RawRowView(0)
			for y := range h {
				for x := range w {
					v := (math.Max(-1, math.Min(1, data[y*w+x])) + 1) / 2
					img.SetGray(c*cellW+x, r*cellH+y, color.Gray{Y: uint8(math.Round(255 * v))})
				}
			}
		}
	}
	return img
}

// LabelRows names the rows of an ImageGrid plot, top row first.
func LabelRows(p *plot.Plot, names []string) {
	var yt []plot.Tick
	for i, n := range names {
		yt = append(yt, plot.Tick{Value: float64(len(names)-1-i) + 0.5, Label: n})
	}
	p.Y.Tick.Marker = plot.ConstantTicks(yt)
}

// ImageRows draws rows of h×w images with values under each (ImageGrid,
// rows named rowNames), sized like the experiments' other image figures.
func ImageRows(title, xlabel string, rowNames []string, h, w int, rows [][]*mat.Dense, values [][]float64, format string) ([]byte, error) {
	p, err := ImageGrid(title, xlabel, "", h, w, rows, values)
	if err != nil {
		return nil, err
	}
	LabelRows(p, rowNames)
	wd := max(vg.Length(len(rows[0]))*0.62*vg.Inch+1.5*vg.Inch, 4*vg.Inch)
	return Bytes(p, wd, vg.Length(float64(len(rows))*0.62*ImageRowScale(h))*vg.Inch+1.2*vg.Inch, format)
}

// SplitRows is x [n, d] as n images, each a [1, d] view of its row.
func SplitRows(x *mat.Dense) []*mat.Dense {
	r, d := x.Dims()
	out := make([]*mat.Dense, r)
	for i := range r {
		out[i] = mat.NewDense(1, d, x.RawRowView(i))
	}
	return out
}
