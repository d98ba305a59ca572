package plotx

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one curve of a line plot: Y[i] against X[i].
type Series struct {
	Name   string // legend entry; empty: not in the legend
	X, Y   []float64
	Points bool // also mark each point
	// Note makes the series a line of text in the legend only (X and Y
	// unused): what a figure must say about curves it does not draw.
	Note bool
	// Lo and Hi, when set (one per point), are an uncertainty interval
	// around Y (e.g. mean ± 1 SE over seeds), drawn as a translucent band
	// in the series' colour, or as vertical error bars with Bars. A
	// figure drawing a mean over seeds should draw one and say what it is
	// in a Note.
	Lo, Hi []float64
	Bars   bool
	// Dashes and Shape, when set, give the line a dash pattern and its
	// points a glyph of their own, so that curves lying on each other stay
	// visible (see Distinct).
	Dashes []vg.Length
	Shape  draw.GlyphDrawer
}

// Distinct gives every drawn series (not the notes) its own dash pattern
// and point glyph, in plotutil's order (solid line and ring first), and
// marks its points; it returns the series.
func Distinct(series []Series) []Series {
	k := 0
	for i := range series {
		if series[i].Note {
			continue
		}
		series[i].Dashes, series[i].Shape, series[i].Points = plotutil.Dashes(k), plotutil.Shape(k), true
		k++
	}
	return series
}

// interval draws s's Lo–Hi interval (points with a non-finite or, on a log
// axis, non-positive end are left out) in colour col.
func interval(p *plot.Plot, s Series, logY bool, col color.Color) error {
	if s.Lo == nil && s.Hi == nil {
		return nil
	}
	if len(s.Lo) != len(s.X) || len(s.Hi) != len(s.X) {
		return fmt.Errorf("series %q has %d x, %d lo and %d hi values", s.Name, len(s.X), len(s.Lo), len(s.Hi))
	}
	var lo, hi plotter.XYs
	for k, x := range s.X {
		l, h := s.Lo[k], s.Hi[k]
		if !finite(x) || !finite(l) || !finite(h) || (logY && l <= 0) || l > h {
			continue
		}
		lo, hi = append(lo, plotter.XY{X: x, Y: l}), append(hi, plotter.XY{X: x, Y: h})
	}
	if len(lo) == 0 {
		return nil
	}
	if s.Bars {
		for k := range lo {
			bar, err := plotter.NewLine(plotter.XYs{lo[k], hi[k]})
			if err != nil {
				return err
			}
			bar.Color, bar.Width = col, 1
			p.Add(bar)
		}
		return nil
	}
	band := append(plotter.XYs{}, hi...)
	for k := len(lo) - 1; k >= 0; k-- {
		band = append(band, lo[k])
	}
	poly, err := plotter.NewPolygon(band)
	if err != nil {
		return err
	}
	c := color.NRGBAModel.Convert(col).(color.NRGBA)
	c.A = 60
	poly.Color, poly.LineStyle.Width = c, 0
	p.Add(poly)
	return nil
}

// Lines draws the series as lines on linear axes, in plotutil's colour order,
// with at least minTicks labelled ticks per axis and the legend (named
// series) right of the data area.
func Lines(title, xlabel, ylabel string, series ...Series) (*plot.Plot, error) {
	return LogLines(title, xlabel, ylabel, false, false, series...)
}

// LogLines is Lines with optional log10 axes. On a log axis, points with a
// non-positive coordinate are dropped; non-finite points are always dropped.
// A series left with no point is an error.
func LogLines(title, xlabel, ylabel string, logX, logY bool, series ...Series) (*plot.Plot, error) {
	if len(series) == 0 {
		return nil, fmt.Errorf("plotx: line plot %q has no series", title)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	if logY {
		p.Y.Scale = plot.LogScale{}
	}
	p.Add(plotter.NewGrid())
	for i, s := range series {
		if s.Note {
			p.Legend.Add(s.Name)
			continue
		}
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("plotx: line plot %q: series %d (%q) has %d x and %d y values", title, i, s.Name, len(s.X), len(s.Y))
		}
		xys := make(plotter.XYs, 0, len(s.X))
		for k := range s.X {
			x, y := s.X[k], s.Y[k]
			if !finite(x) || !finite(y) || (logX && x <= 0) || (logY && y <= 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
		}
		if len(xys) == 0 {
			return nil, fmt.Errorf("plotx: line plot %q: series %d (%q) has no plottable point", title, i, s.Name)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plotx: line plot %q: series %d (%q): %w", title, i, s.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = 1.5
		l.Dashes = s.Dashes
		if err := interval(p, s, logY, l.Color); err != nil {
			return nil, fmt.Errorf("plotx: line plot %q: series %d: %w", title, i, err)
		}
		p.Add(l)
		var thumbs []plot.Thumbnailer = []plot.Thumbnailer{l}
		if s.Points {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("plotx: line plot %q: series %d (%q): %w", title, i, s.Name, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: l.Color, Radius: 2, Shape: draw.CircleGlyph{}}
			if s.Shape != nil {
				sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = 3.5, s.Shape
			}
			p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		if s.Name != "" {
			p.Legend.Add(s.Name, thumbs...)
		}
	}
	Readable(p)
	return p, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
