package plotx

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// HeatOptions tunes HeatMap; the zero value gives a smooth blue–red colour map
// over the finite data range with a colour bar on the right.
type HeatOptions struct {
	// ColorMap maps values to colours (nil: moreland.SmoothBlueRed()). Its
	// range is reset to [0, 1] before use.
	ColorMap palette.ColorMap
	// Colors is the number of distinct colours (0: 256).
	Colors int
	// Min and Max fix the colour range; when Min >= Max the finite range of
	// the (possibly log-transformed) data is used. With LogZ they are log10 values.
	Min, Max float64
	// LogZ colours by log10(z); non-positive values are left blank.
	LogZ bool
	// XLabel, YLabel and ColorBarLabel label the axes and the colour bar.
	XLabel, YLabel, ColorBarLabel string
	// NoColorBar leaves the colour bar out.
	NoColorBar bool
}

// HeatMap draws the field z[iy][ix] over the grid (xs[ix], ys[iy]) with a colour
// bar; xs and ys must be strictly increasing (they need not be uniform). NaN
// values are left blank. At most one HeatOptions is used.
func HeatMap(title string, xs, ys []float64, z [][]float64, opts ...HeatOptions) (*plot.Plot, error) {
	var o HeatOptions
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		return nil, fmt.Errorf("plotx: HeatMap %q: got %d HeatOptions, want at most 1", title, len(opts))
	}
	if err := checkAxis("xs", xs); err != nil {
		return nil, fmt.Errorf("heat map %q: %w", title, err)
	}
	if err := checkAxis("ys", ys); err != nil {
		return nil, fmt.Errorf("heat map %q: %w", title, err)
	}
	if err := checkField("z", z, len(xs), len(ys)); err != nil {
		return nil, fmt.Errorf("heat map %q: %w", title, err)
	}
	if o.LogZ {
		z = log10Field(z)
	}
	lo, hi := o.Min, o.Max
	if !(lo < hi) {
		var ok bool
		if lo, hi, ok = finiteRange(z); !ok {
			return nil, fmt.Errorf("plotx: heat map %q has no finite (positive, with LogZ) value", title)
		}
	}
	if lo == hi { // a constant field still gets a usable colour range
		d := math.Max(math.Abs(lo)*1e-3, 1e-12)
		lo, hi = lo-d, hi+d
	}
	n := o.Colors
	if n <= 0 {
		n = 256
	}
	if n < 2 {
		n = 2
	}
	cm := o.ColorMap
	if cm == nil {
		cm = moreland.SmoothBlueRed()
	}
	cm.SetMin(0)
	cm.SetMax(1)
	pal := cm.Palette(n)

	h := plotter.NewHeatMap(grid{xs: xs, ys: ys, z: z}, pal)
	h.Min, h.Max = lo, hi
	// Raster drawing (one image) avoids the hairline seams between vector cells,
	// but gonum's raster path assumes evenly spaced cells.
	h.Rasterized = uniform(xs) && uniform(ys)
	cols := pal.Colors()
	h.Underflow, h.Overflow = cols[0], cols[len(cols)-1]

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = o.XLabel, o.YLabel
	p.X.Padding, p.Y.Padding = 0, 0
	p.Add(h)
	if !o.NoColorBar {
		label := o.ColorBarLabel
		if o.LogZ && label == "" {
			label = "log10"
		}
		p.Add(&colorBar{colors: cols, min: lo, max: hi, label: label, style: p.Y.Tick.Label, lineStyle: p.Y.Tick.LineStyle})
	}
	return p, nil
}

// uniform reports whether the values are evenly spaced (to 1e-6 of the step).
func uniform(v []float64) bool {
	step := (v[len(v)-1] - v[0]) / float64(len(v)-1)
	for i := 1; i < len(v); i++ {
		if math.Abs(v[i]-v[i-1]-step) > 1e-6*step {
			return false
		}
	}
	return true
}

// log10Field returns log10 of z with non-positive and non-finite values as NaN.
func log10Field(z [][]float64) [][]float64 {
	out := make([][]float64, len(z))
	for iy, row := range z {
		out[iy] = make([]float64, len(row))
		for ix, v := range row {
			if v > 0 && !math.IsInf(v, 1) {
				out[iy][ix] = math.Log10(v)
			} else {
				out[iy][ix] = math.NaN()
			}
		}
	}
	return out
}

// colorBar is a vertical colour scale drawn to the right of the data area; it
// reserves its room through a glyph box, which makes the plot shrink its data
// area, so it works with any plot and survives Quiver overlays.
type colorBar struct {
	colors    []color.Color
	min, max  float64
	label     string
	style     text.Style
	lineStyle draw.LineStyle
}

const (
	barGap   = vg.Length(8)
	barWidth = vg.Length(12)
	barTick  = vg.Length(3)
	barPad   = vg.Length(3)
)

func (b *colorBar) ticks() []plot.Tick {
	var ts []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(b.min, b.max) {
		if t.Label != "" && t.Value >= b.min && t.Value <= b.max {
			ts = append(ts, t)
		}
	}
	return ts
}

// width is the horizontal room the bar needs right of the data area.
func (b *colorBar) width() vg.Length {
	var lw vg.Length
	for _, t := range b.ticks() {
		lw = max(lw, b.style.Width(t.Label))
	}
	w := barGap + barWidth + barTick + barPad + lw
	if b.label != "" {
		w += barPad + b.style.Height(b.label)
	}
	return w
}

// GlyphBoxes implements plot.GlyphBoxer: a box at the right edge as wide as the bar.
func (b *colorBar) GlyphBoxes(*plot.Plot) []plot.GlyphBox {
	return []plot.GlyphBox{{X: 1, Y: 0.5, Rectangle: vg.Rectangle{Max: vg.Point{X: b.width()}}}}
}

// Plot implements plot.Plotter.
func (b *colorBar) Plot(c draw.Canvas, _ *plot.Plot) {
	x0 := c.Max.X + barGap
	x1 := x0 + barWidth
	y0, y1 := c.Min.Y, c.Max.Y
	n := len(b.colors)
	dy := (y1 - y0) / vg.Length(n)
	for k, col := range b.colors {
		ya := y0 + vg.Length(k)*dy
		c.SetColor(col)
		// Overlap neighbours by a hair so no background shows between bands.
		c.Fill(vg.Rectangle{Min: vg.Point{X: x0, Y: ya}, Max: vg.Point{X: x1, Y: ya + dy + 0.3}}.Path())
	}
	c.StrokeLines(b.lineStyle, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}})
	ts := b.style
	ts.XAlign, ts.YAlign = draw.XLeft, draw.YCenter
	var lw vg.Length
	for _, t := range b.ticks() {
		y := y0 + (y1-y0)*vg.Length((t.Value-b.min)/(b.max-b.min))
		c.StrokeLine2(b.lineStyle, x1, y, x1+barTick, y)
		c.FillText(ts, vg.Point{X: x1 + barTick + barPad, Y: y}, t.Label)
		lw = max(lw, ts.Width(t.Label))
	}
	if b.label != "" {
		ls := b.style
		ls.Rotation = math.Pi / 2
		ls.XAlign, ls.YAlign = draw.XCenter, draw.YTop
		c.FillText(ls, vg.Point{X: x1 + barTick + 2*barPad + lw, Y: (y0 + y1) / 2}, b.label)
	}
}
