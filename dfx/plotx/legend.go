package plotx

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// legendOutside moves p's legend to the right of the data area, where it
// covers no curve: the data area shrinks by the legend's width (as for a
// colour bar). A plot without legend entries is left as it is. Call it
// after the last entry is added.
func legendOutside(p *plot.Plot) {
	probe := draw.Canvas{Rectangle: vg.Rectangle{Max: vg.Point{X: 1000, Y: 1000}}}
	r := p.Legend.Rectangle(probe)
	if r.Max.X-r.Min.X <= 0 {
		return
	}
	l := &outsideLegend{legend: p.Legend, width: r.Max.X - r.Min.X}
	l.legend.Top, l.legend.Left = true, true
	p.Legend = plot.NewLegend()
	p.Add(l)
}

// outsideLegend draws a copy of a plot's legend right of the data area; its
// glyph box reserves the room.
type outsideLegend struct {
	legend plot.Legend
	width  vg.Length
}

const legendGap = vg.Length(6)

// GlyphBoxes implements plot.GlyphBoxer.
func (l *outsideLegend) GlyphBoxes(*plot.Plot) []plot.GlyphBox {
	return []plot.GlyphBox{{X: 1, Y: 0.5, Rectangle: vg.Rectangle{Max: vg.Point{X: legendGap + l.width + barPad}}}}
}

// Plot implements plot.Plotter.
func (l *outsideLegend) Plot(c draw.Canvas, _ *plot.Plot) {
	x0 := c.Max.X + legendGap
	lc := c
	lc.Rectangle = vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x0 + l.width, Y: c.Max.Y}}
	l.legend.Draw(lc)
}
