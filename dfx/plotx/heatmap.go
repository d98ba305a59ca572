package plotx

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
)

// HeatOptions tunes HeatMap; the zero value gives a smooth blue–red colour map
// over the finite data range with a colour bar on the right.
//
// A colour scale either covers the data or says what it clips: when Min and
// Max leave values outside, those cells are painted UnderColor / OverColor,
// the colour bar ends in a triangle of that colour and names the data's
// extreme beside it ("min −28.3"), and its label says "(clipped)".
// SymLog is the alternative that covers a range over several decades of
// both signs without clipping.
type HeatOptions struct {
	// ColorMap maps values to colours (nil: moreland.SmoothBlueRed()). Its
	// range is reset to [0, 1] before use.
	ColorMap palette.ColorMap
	// Colors is the number of distinct colours (0: 256).
	Colors int
	// Min and Max fix the colour range; when Min >= Max the finite range of
	// the data is used. They are in data units (with LogZ: log10 units).
	Min, Max float64
	// LogZ colours by log10(z); non-positive values are left blank.
	LogZ bool
	// SymLog > 0 colours by the symmetric logarithm
	// sign(z)·log10(1 + |z|/SymLog): linear within about ±SymLog,
	// logarithmic beyond; the colour bar is labelled in data units.
	SymLog float64
	// UnderColor and OverColor paint values below Min and above Max
	// (nil: black and gold, outside every palette of gonum/plot).
	UnderColor, OverColor color.Color
	// XLabel, YLabel and ColorBarLabel label the axes and the colour bar.
	XLabel, YLabel, ColorBarLabel string
	// NoColorBar leaves the colour bar out.
	NoColorBar bool
	// Diverging centres the colour map at 0: the range is widened to
	// [−m, m], m = max(|Min|, |Max|), so that the map's middle colour is 0
	// (for signed quantities on a diverging map such as the default).
	Diverging bool
}

// Default saturation colours of HeatMap.
var (
	DefaultUnderColor color.Color = color.Black
	DefaultOverColor  color.Color = color.RGBA{R: 0xff, G: 0xc8, B: 0x00, A: 0xff}
)

// HeatMap draws the field z[iy][ix] over the grid (xs[ix], ys[iy]) with a colour
// bar; xs and ys must be strictly increasing (they need not be uniform). NaN
// values are left blank. At most one HeatOptions is used.
func HeatMap(title string, xs, ys []float64, z [][]float64, opts ...HeatOptions) (*plot.Plot, error) {
	p, _, err := heatMap(title, xs, ys, z, opts...)
	return p, err
}

// heatOptions checks a heat map's axes, field and options (at most one
// HeatOptions, LogZ and SymLog exclusive, SymLog finite and ≥ 0).
func heatOptions(title string, xs, ys []float64, z [][]float64, opts []HeatOptions) (HeatOptions, error) {
	var o HeatOptions
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		return o, fmt.Errorf("plotx: HeatMap %q: got %d HeatOptions, want at most 1", title, len(opts))
	}
	if err := checkAxis("xs", xs); err != nil {
		return o, fmt.Errorf("heat map %q: %w", title, err)
	}
	if err := checkAxis("ys", ys); err != nil {
		return o, fmt.Errorf("heat map %q: %w", title, err)
	}
	if err := checkField("z", z, len(xs), len(ys)); err != nil {
		return o, fmt.Errorf("heat map %q: %w", title, err)
	}
	if o.LogZ && o.SymLog > 0 {
		return o, fmt.Errorf("plotx: heat map %q: LogZ and SymLog exclude each other", title)
	}
	if o.SymLog < 0 || math.IsNaN(o.SymLog) || math.IsInf(o.SymLog, 0) {
		return o, fmt.Errorf("plotx: heat map %q: SymLog %v must be positive and finite", title, o.SymLog)
	}
	return o, nil
}

// palette is the options' colour map (default Moreland's smooth blue–red)
// sampled at Colors colours (default 256, at least 2) over [0, 1].
func (o HeatOptions) palette() palette.Palette {
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
	return cm.Palette(n)
}

// heatMap is HeatMap returning its colour bar (nil with NoColorBar).
func heatMap(title string, xs, ys []float64, z [][]float64, opts ...HeatOptions) (*plot.Plot, *colorBar, error) {
	o, err := heatOptions(title, xs, ys, z, opts)
	if err != nil {
		return nil, nil, err
	}
	if o.LogZ {
		z = log10Field(z)
	}
	dlo, dhi, ok := finiteRange(z)
	if !ok {
		return nil, nil, fmt.Errorf("plotx: heat map %q has no finite (positive, with LogZ) value", title)
	}
	lo, hi := o.Min, o.Max
	if !(lo < hi) {
		lo, hi = dlo, dhi
	}
	if o.Diverging {
		m := math.Max(math.Abs(lo), math.Abs(hi))
		lo, hi = -m, m
	}
	under, over := dlo < lo, dhi > hi
	sc := scale{symLog: o.SymLog}
	z = sc.field(z)
	tlo, thi := sc.to(lo), sc.to(hi)
	if tlo == thi { // a constant field still gets a usable colour range
		d := math.Max(math.Abs(tlo)*1e-3, 1e-12)
		tlo, thi = tlo-d, thi+d
	}
	pal := o.palette()

	h := plotter.NewHeatMap(grid{xs: xs, ys: ys, z: z}, pal)
	h.Min, h.Max = tlo, thi
	// Raster drawing (one image) avoids the hairline seams between vector cells,
	// but gonum's raster path assumes evenly spaced cells.
	h.Rasterized = uniform(xs) && uniform(ys)
	cols := pal.Colors()
	h.Underflow, h.Overflow = o.UnderColor, o.OverColor
	if h.Underflow == nil {
		h.Underflow = DefaultUnderColor
	}
	if h.Overflow == nil {
		h.Overflow = DefaultOverColor
	}

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = o.XLabel, o.YLabel
	p.X.Padding, p.Y.Padding = 0, 0
	p.Add(h)
	Readable(p)
	if o.NoColorBar {
		return p, nil, nil
	}
	label := o.ColorBarLabel
	if o.LogZ && label == "" {
		label = "log10"
	}
	b := &colorBar{colors: cols, min: tlo, max: thi, label: label, ticks: sc.ticks(tlo, thi),
		style: p.Y.Tick.Label, lineStyle: p.Y.Tick.LineStyle}
	if under {
		b.under, b.underText = h.Underflow, "min "+formatExtreme(dlo, o.LogZ)
	}
	if over {
		b.over, b.overText = h.Overflow, "max "+formatExtreme(dhi, o.LogZ)
	}
	if (under || over) && b.label != "" { // without a label, the triangles and extremes say it alone
		b.label += " (clipped)"
	}
	p.Add(b)
	return p, b, nil
}

// formatExtreme writes a clipped extreme in data units.
func formatExtreme(v float64, logZ bool) string {
	if logZ {
		return strconv.FormatFloat(v, 'g', 3, 64) + " (log10)"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
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
