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
	// XLo and XHi, when set (one per point), are an interval around X,
	// drawn as horizontal error bars: for a point whose x is itself a
	// mean (e.g. Y against X, both means over samples).
	XLo, XHi []float64
	// NoLine draws the points alone (they are marked even without
	// Points): for values per category (see NominalX), where a line
	// between neighbours would mean nothing.
	NoLine bool
	// Dashes and Shape, when set, give the line a dash pattern and its
	// points a glyph of their own, so that curves lying on each other stay
	// visible (see Distinct).
	Dashes []vg.Length
	Shape  draw.GlyphDrawer
	// Color, when set, replaces the series' colour in plotutil's order:
	// for points that belong with another curve (e.g. a paper's values
	// beside ours).
	Color color.Color
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

// Coincident names the drawn series (not notes) that lie on each other: a
// group of two or more with the same X whose Y differ from the group's
// first series by at most tol at every point. It returns one legend note
// per group ("a, b and c lie on each other (|Δ| ≤ …)", the largest
// difference from the first), for a figure in which one curve hides
// others even with Distinct's styles.
func Coincident(series []Series, tol float64) []Series {
	var notes []Series
	used := make([]bool, len(series))
	same := func(a, b Series) bool {
		if len(a.X) == 0 || len(a.X) != len(b.X) || len(a.Y) != len(b.Y) {
			return false
		}
		for i := range a.X {
			if a.X[i] != b.X[i] || !(math.Abs(a.Y[i]-b.Y[i]) <= tol) {
				return false
			}
		}
		return true
	}
	for i, a := range series {
		if used[i] || a.Note {
			continue
		}
		names, gap := []string{a.Name}, 0.0
		for j := i + 1; j < len(series); j++ {
			if b := series[j]; !used[j] && !b.Note && same(a, b) {
				used[j] = true
				names = append(names, b.Name)
				for k := range a.Y {
					gap = math.Max(gap, math.Abs(a.Y[k]-b.Y[k]))
				}
			}
		}
		if len(names) < 2 {
			continue
		}
		list := names[0]
		for k, nm := range names[1:] {
			if k == len(names)-2 {
				list += " and " + nm
			} else {
				list += ", " + nm
			}
		}
		notes = append(notes, Series{Name: fmt.Sprintf("%s lie on each other (|Δ| ≤ %.2g)", list, gap), Note: true})
	}
	return notes
}

// OffScale is the legend note for a series with off of its total points
// outside the axis range and not drawn, where says how far they lie (e.g.
// "down to −7.41"): the whole series is named off scale only when every
// point is.
func OffScale(name string, off, total int, where string) Series {
	if off >= total {
		return Series{Name: fmt.Sprintf("%s: off scale (%s), not drawn", name, where), Note: true}
	}
	return Series{Name: fmt.Sprintf("%s: %d of %d points off scale (%s), not drawn", name, off, total, where), Note: true}
}

// intervals are points with the distances from each to the two ends of
// its interval, for gonum's error bars (as YErrorer and XErrorer).
type intervals struct {
	plotter.XYs
	below, above []float64
}

func (v intervals) YError(i int) (float64, float64) { return v.below[i], v.above[i] }
func (v intervals) XError(i int) (float64, float64) { return v.below[i], v.above[i] }

// checkInterval reports whether lo and hi are unset or one value per x.
func checkInterval(s Series, name string, lo, hi []float64) error {
	if lo == nil && hi == nil {
		return nil
	}
	if len(lo) != len(s.X) || len(hi) != len(s.X) {
		return fmt.Errorf("series %q has %d x, %d %s-lo and %d %s-hi values", s.Name, len(s.X), len(lo), name, len(hi), name)
	}
	return nil
}

// interval draws s's Lo–Hi interval as a band or vertical bars, and its
// XLo–XHi interval as horizontal bars, in colour col. A point with a
// non-finite coordinate or end, an end that is non-positive on a log axis,
// or (for bars) an interval that does not hold the point is left out.
func interval(p *plot.Plot, s Series, logX, logY bool, col color.Color) error {
	if err := checkInterval(s, "y", s.Lo, s.Hi); err != nil {
		return err
	}
	if err := checkInterval(s, "x", s.XLo, s.XHi); err != nil {
		return err
	}
	ok := func(k int) bool {
		return finite(s.X[k]) && finite(s.Y[k]) && (!logX || s.X[k] > 0) && (!logY || s.Y[k] > 0)
	}
	if s.XLo != nil {
		if err := errorBars(p, s, true, s.XLo, s.XHi, logX, ok, col); err != nil {
			return err
		}
	}
	if s.Lo == nil {
		return nil
	}
	if s.Bars {
		return errorBars(p, s, false, s.Lo, s.Hi, logY, ok, col)
	}
	var lo, hi plotter.XYs
	for k, x := range s.X {
		l, h := s.Lo[k], s.Hi[k]
		if !finite(x) || !finite(l) || !finite(h) || (logX && x <= 0) || (logY && l <= 0) || l > h {
			continue
		}
		lo, hi = append(lo, plotter.XY{X: x, Y: l}), append(hi, plotter.XY{X: x, Y: h})
	}
	if len(lo) == 0 {
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

// errorBars adds to p, in colour col, s's intervals lo–hi around its x
// values (horizontal) or its y values (vertical bars), at the points where
// ok holds, both ends are finite (positive on a log axis) and the interval
// holds the point.
func errorBars(p *plot.Plot, s Series, horizontal bool, lo, hi []float64, logAxis bool, ok func(int) bool, col color.Color) error {
	at := s.Y
	if horizontal {
		at = s.X
	}
	var v intervals
	for k, c := range at {
		l, h := lo[k], hi[k]
		if ok(k) && finite(l) && finite(h) && (!logAxis || l > 0) && l <= c && c <= h {
			v.XYs, v.below, v.above = append(v.XYs, plotter.XY{X: s.X[k], Y: s.Y[k]}), append(v.below, c-l), append(v.above, h-c)
		}
	}
	if len(v.XYs) == 0 {
		return nil
	}
	var bars plot.Plotter
	var style *draw.LineStyle
	if horizontal {
		b, err := plotter.NewXErrorBars(v)
		if err != nil {
			return err
		}
		bars, style = b, &b.LineStyle
	} else {
		b, err := plotter.NewYErrorBars(v)
		if err != nil {
			return err
		}
		bars, style = b, &b.LineStyle
	}
	style.Color, style.Width = col, 1
	p.Add(bars)
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
		if s.Color != nil {
			l.Color = s.Color
		}
		l.Width = 1.5
		l.Dashes = s.Dashes
		if err := interval(p, s, logX, logY, l.Color); err != nil {
			return nil, fmt.Errorf("plotx: line plot %q: series %d: %w", title, i, err)
		}
		var thumbs []plot.Thumbnailer
		if !s.NoLine {
			p.Add(l)
			thumbs = append(thumbs, l)
		}
		if s.Points || s.NoLine {
			sc, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("plotx: line plot %q: series %d (%q): %w", title, i, s.Name, err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: l.Color, Radius: 2, Shape: draw.CircleGlyph{}}
			if s.NoLine {
				sc.GlyphStyle.Radius = 3
			}
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

// NominalX labels p's x axis with names at x = 0, 1, …, len(names)−1, for
// series whose X are category indices (drawn with NoLine), and leaves half
// a category of room at each end, and 5 % of the y range above and below
// (on a linear y axis), so that no marker sits on the frame. Call it after
// Lines.
func NominalX(p *plot.Plot, names ...string) {
	if len(names) == 0 {
		return
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = math.Min(p.X.Min, -0.5), math.Max(p.X.Max, float64(len(names))-0.5)
	if _, linear := p.Y.Scale.(plot.LinearScale); linear && p.Y.Max > p.Y.Min {
		pad := 0.05 * (p.Y.Max - p.Y.Min)
		p.Y.Min, p.Y.Max = p.Y.Min-pad, p.Y.Max+pad
	}
}

// Room widens both axes of p by 5 % of their span at each end (of log10 of
// it on a log axis), so that no marker sits on the frame: for scatter
// plots whose extreme points would otherwise touch it. Call it after the
// data are added.
func Room(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if !(a.Max > a.Min) {
			continue
		}
		if isLog(a.Scale) && a.Min > 0 {
			f := math.Pow(a.Max/a.Min, 0.05)
			a.Min, a.Max = a.Min/f, a.Max*f
			continue
		}
		pad := 0.05 * (a.Max - a.Min)
		a.Min, a.Max = a.Min-pad, a.Max+pad
	}
}
