package plotx

import (
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawCanvas gives a throw-away image canvas of the rectangle's size, for
// measuring a plot's data area.
func drawCanvas(r vg.Rectangle) draw.Canvas {
	return draw.New(vgimg.New(r.Max.X, r.Max.Y))
}
