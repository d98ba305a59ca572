package plotx

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// scale maps data values to colour coordinates: the identity, or the
// symmetric logarithm sign(z)·log10(1 + |z|/c) when symLog = c > 0.
type scale struct{ symLog float64 }

func (s scale) to(v float64) float64 {
	if s.symLog <= 0 || math.IsNaN(v) {
		return v
	}
	return math.Copysign(math.Log10(1+math.Abs(v)/s.symLog), v)
}

func (s scale) from(u float64) float64 {
	if s.symLog <= 0 {
		return u
	}
	return math.Copysign(s.symLog*(math.Pow(10, math.Abs(u))-1), u)
}

func (s scale) field(z [][]float64) [][]float64 {
	if s.symLog <= 0 {
		return z
	}
	out := make([][]float64, len(z))
	for iy, row := range z {
		out[iy] = make([]float64, len(row))
		for ix, v := range row {
			out[iy][ix] = s.to(v)
		}
	}
	return out
}

// ticks are the colour bar's ticks on [lo, hi] (colour coordinates): plain
// Ticks, or under SymLog those of symTicks, and plain Ticks on a range inside
// ±c (there colour units ≈ data units).
func (s scale) ticks(lo, hi float64) []plot.Tick {
	if s.symLog <= 0 {
		return Ticks{}.Ticks(lo, hi)
	}
	ts := s.symTicks(s.from(lo), s.from(hi))
	if ts == nil {
		return Ticks{}.Ticks(lo, hi)
	}
	for i := range ts {
		ts[i].Value = s.to(ts[i].Value)
	}
	return ts
}

// symTicks are the ticks of a symmetric-log scale on [dlo, dhi] in data
// units: 0 and ±c·{1, 2, 5}·10^k (only ±c·10^k when that still leaves
// minTicks labels); nil when fewer than minTicks fit.
func (s scale) symTicks(dlo, dhi float64) []plot.Tick {
	pick := func(mantissas []float64) []plot.Tick {
		var ts []plot.Tick
		if dlo <= 0 && dhi >= 0 {
			ts = append(ts, plot.Tick{Value: 0, Label: "0"})
		}
		top := math.Max(math.Abs(dlo), math.Abs(dhi))
		eps := 1e-9 * top
		for p := s.symLog; p <= top*(1+1e-9); p *= 10 {
			for _, m := range mantissas {
				for _, v := range []float64{-m * p, m * p} {
					if v >= dlo-eps && v <= dhi+eps {
						ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
					}
				}
			}
		}
		return ts
	}
	ts := pick([]float64{1})
	if len(ts) < minTicks {
		ts = pick([]float64{1, 2, 5})
	}
	if len(ts) < minTicks {
		return nil
	}
	return ts
}

// symLogScale is the axis scale sign(v)·log10(1 + |v|/C): logarithmic
// beyond ±C, linear within, so that values of both signs and zero keep
// their place on an axis that spans decades.
type symLogScale struct{ C float64 }

var _ plot.Normalizer = symLogScale{}

// Normalize implements plot.Normalizer.
func (s symLogScale) Normalize(min, max, x float64) float64 {
	sc := scale{symLog: s.C}
	a, b := sc.to(min), sc.to(max)
	return (sc.to(x) - a) / (b - a)
}

// symLogTicks labels a symLogScale axis in data units: 0 and ±C·{1, 2,
// 5}·10^k, or plain Ticks on a range too narrow for minTicks of those.
// Values within ±10C stay unlabelled ticks when minTicks labels remain
// without them: on the axis they sit too close to 0 to label.
type symLogTicks struct{ C float64 }

var _ plot.Ticker = symLogTicks{}

// Ticks implements plot.Ticker.
func (s symLogTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := (scale{symLog: s.C}).symTicks(lo, hi)
	if ts == nil {
		return Ticks{}.Ticks(lo, hi)
	}
	n := 0
	for _, t := range ts {
		if t.Value == 0 || math.Abs(t.Value) >= 10*s.C*(1-1e-9) {
			n++
		}
	}
	if n >= minTicks {
		for i, t := range ts {
			if t.Value != 0 && math.Abs(t.Value) < 10*s.C*(1-1e-9) {
				ts[i].Label = ""
			}
		}
	}
	return ts
}

// SymLogY puts p's y axis on symLogScale{c} with symLogTicks, for data of
// both signs over several decades (c > 0: the half-width of the linear
// part, which the axis label should state). Call it after Lines.
func SymLogY(p *plot.Plot, c float64) {
	p.Y.Scale, p.Y.Tick.Marker = symLogScale{C: c}, symLogTicks{C: c}
}

// colorBar is a vertical colour scale drawn to the right of the data area; it
// reserves its room through a glyph box, which makes the plot shrink its data
// area, so it works with any plot and survives Quiver overlays. A clipped end
// is a triangle in the saturation colour with the data's extreme beside it.
type colorBar struct {
	colors    []color.Color
	min, max  float64 // colour coordinates
	ticks     []plot.Tick
	label     string
	style     text.Style
	lineStyle draw.LineStyle

	under, over         color.Color // nil: that end is not clipped
	underText, overText string
}

const (
	barGap   = vg.Length(8)
	barWidth = vg.Length(12)
	barTick  = vg.Length(3)
	barPad   = vg.Length(3)
)

// labelled are the ticks with a label inside the bar's range.
func (b *colorBar) labelled() []plot.Tick {
	var ts []plot.Tick
	for _, t := range b.ticks {
		if t.Label != "" && t.Value >= b.min && t.Value <= b.max {
			ts = append(ts, t)
		}
	}
	return ts
}

// width is the horizontal room the bar needs right of the data area.
func (b *colorBar) width() vg.Length {
	var lw vg.Length
	for _, t := range b.labelled() {
		lw = max(lw, b.style.Width(t.Label))
	}
	for _, s := range []string{b.underText, b.overText} {
		lw = max(lw, b.style.Width(s))
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
	tri := barWidth // height of a saturation triangle
	ts := b.style
	ts.XAlign, ts.YAlign = draw.XLeft, draw.YCenter
	var lw vg.Length
	if b.under != nil {
		c.SetColor(b.under)
		c.Fill(triangle(x0, x1, y0+tri, y0))
		c.StrokeLines(b.lineStyle, []vg.Point{{X: x0, Y: y0 + tri}, {X: (x0 + x1) / 2, Y: y0}, {X: x1, Y: y0 + tri}})
		c.FillText(ts, vg.Point{X: x1 + barTick + barPad, Y: y0 + tri/3}, b.underText)
		lw = max(lw, ts.Width(b.underText))
		y0 += tri
	}
	if b.over != nil {
		c.SetColor(b.over)
		c.Fill(triangle(x0, x1, y1-tri, y1))
		c.StrokeLines(b.lineStyle, []vg.Point{{X: x0, Y: y1 - tri}, {X: (x0 + x1) / 2, Y: y1}, {X: x1, Y: y1 - tri}})
		c.FillText(ts, vg.Point{X: x1 + barTick + barPad, Y: y1 - tri/3}, b.overText)
		lw = max(lw, ts.Width(b.overText))
		y1 -= tri
	}
	n := len(b.colors)
	dy := (y1 - y0) / vg.Length(n)
	for k, col := range b.colors {
		ya := y0 + vg.Length(k)*dy
		c.SetColor(col)
		// Overlap neighbours by a hair so no background shows between bands.
		top := min(ya+dy+0.3, y1)
		c.Fill(vg.Rectangle{Min: vg.Point{X: x0, Y: ya}, Max: vg.Point{X: x1, Y: top}}.Path())
	}
	c.StrokeLines(b.lineStyle, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}, {X: x0, Y: y0}})
	for _, t := range b.labelled() {
		y := y0 + (y1-y0)*vg.Length((t.Value-b.min)/(b.max-b.min))
		c.StrokeLine2(b.lineStyle, x1, y, x1+barTick, y)
		c.FillText(ts, vg.Point{X: x1 + barTick + barPad, Y: y}, t.Label)
		lw = max(lw, ts.Width(t.Label))
	}
	if b.label != "" {
		ls := b.style
		ls.Rotation = math.Pi / 2
		ls.XAlign, ls.YAlign = draw.XCenter, draw.YTop
		c.FillText(ls, vg.Point{X: x1 + barTick + 2*barPad + lw, Y: (c.Min.Y + c.Max.Y) / 2}, b.label)
	}
}

// triangle is the path of a triangle with base (xa, yBase)–(xb, yBase) and
// its apex half-way at yApex.
func triangle(xa, xb, yBase, yApex vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: xa, Y: yBase})
	p.Line(vg.Point{X: xb, Y: yBase})
	p.Line(vg.Point{X: (xa + xb) / 2, Y: yApex})
	p.Close()
	return p
}
