package ot

import (
	"fmt"
	"image/color"
	"math"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// scheduleColors gives each schedule of Table 3 one colour in every figure.
var scheduleColors = map[string]color.Color{
	"ve":    color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"vp":    color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"subvp": color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"edm":   color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// Figure names of the report (PNG).
const (
	FigAsymPublished = "asym_vs_t_published.png"
	FigAsymReference = "asym_vs_noise_reference.png"
	FigHistPublished = "hist_published_offdiag.png"
	FigHistReference = "hist_reference.png"
	FigDeformation   = "grid_deformation.png"
)

// curvePlot draws one curve per schedule in percent (as in the tables);
// when every curve lies within 1 % (relative) of the first, the legend says
// that they coincide, so that the reader does not look for hidden ones.
func curvePlot(title, xlabel, ylabel string, curves []Curve, logX bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	for _, c := range curves {
		xys := plotter.XYs{}
		for i := range c.X {
			if logX && !(c.X[i] > 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: c.X[i], Y: 100 * c.Y[i]})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = scheduleColors[c.Schedule], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.Schedule, l)
	}
	if coincide(curves, 0.01) {
		p.Legend.Add("the curves coincide")
		p.Legend.Add("(drawn on top of one another)")
	}
	p.Add(plotter.NewGrid())
	return p, nil
}

// coincide reports whether every curve lies within rel (relative to the
// largest value) of the first wherever their x ranges overlap (the first
// curve interpolated linearly).
func coincide(curves []Curve, rel float64) bool {
	if len(curves) < 2 || len(curves[0].X) < 2 {
		return false
	}
	var top float64
	for _, c := range curves {
		for _, y := range c.Y {
			top = math.Max(top, math.Abs(y))
		}
	}
	ref := curves[0]
	for _, c := range curves[1:] {
		for i, x := range c.X {
			y, ok := interpolate(ref, x)
			if ok && math.Abs(c.Y[i]-y) > rel*top {
				return false
			}
		}
	}
	return true
}

// interpolate is c's value at x, linear between neighbours; ok is false
// outside c's range. c.X is monotone, increasing or decreasing.
func interpolate(c Curve, x float64) (float64, bool) {
	for i := 1; i < len(c.X); i++ {
		x0, x1 := c.X[i-1], c.X[i]
		if (x-x0)*(x-x1) <= 0 {
			if x1 == x0 {
				return c.Y[i], true
			}
			w := (x - x0) / (x1 - x0)
			return c.Y[i-1] + w*(c.Y[i]-c.Y[i-1]), true
		}
	}
	return 0, false
}

// histPlot draws per-schedule histograms on common bins as step lines, with
// optional vertical marks (e.g. the paper's reported values).
func histPlot(title, xlabel string, h map[string][]float64, marks map[string]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "fraction of chains per bin"
	hi := 0.0
	for _, v := range h {
		for _, x := range v {
			if !math.IsNaN(x) {
				hi = math.Max(hi, 100*x)
			}
		}
	}
	for _, m := range marks {
		hi = math.Max(hi, m)
	}
	hi = math.Max(hi*1.05, 1e-9)
	const bins = 30
	w := hi / bins
	var first []float64 // the first schedule's counts, to tell coinciding histograms
	var top, gap float64
	for _, sched := range Table3Schedules {
		v, ok := h[sched]
		if !ok || len(v) == 0 {
			continue
		}
		counts := make([]float64, bins)
		for _, x := range v {
			if math.IsNaN(x) {
				continue
			}
			counts[min(int(100*x/w), bins-1)] += 1 / float64(len(v))
		}
		if first == nil {
			first = counts
		}
		for b, c := range counts {
			top, gap = math.Max(top, c), math.Max(gap, math.Abs(c-first[b]))
		}
		xys := plotter.XYs{{X: 0, Y: 0}}
		for b, c := range counts {
			xys = append(xys, plotter.XY{X: float64(b) * w, Y: c}, plotter.XY{X: float64(b+1) * w, Y: c})
		}
		xys = append(xys, plotter.XY{X: hi, Y: 0})
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = scheduleColors[sched], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(sched, l)
		if m, ok := marks[sched]; ok {
			ml, err := plotter.NewLine(plotter.XYs{{X: m, Y: 0}, {X: m, Y: 0.5}})
			if err != nil {
				return nil, err
			}
			ml.Color, ml.Dashes = scheduleColors[sched], []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(ml)
		}
	}
	if len(marks) > 0 {
		p.Legend.Add("dashed: the paper's rate")
	}
	if len(h) > 1 && gap <= 0.05*top {
		p.Legend.Add("the histograms coincide")
		p.Legend.Add("(to 5 % of the peak)")
	}
	return p, nil
}

func deformationPlot(d Deformation) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s data: a grid of x(T) mapped to σ = 0.2 (VP)", d.Data)
	p.X.Label.Text, p.Y.Label.Text = "x₁", "x₂"
	for i, line := range d.Lines {
		xys := make(plotter.XYs, len(line))
		for q, pt := range line {
			xys[q] = plotter.XY{X: pt[0], Y: pt[1]}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Width = vg.Points(0.6)
		if i < len(d.Lines)/2 {
			l.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
		} else {
			l.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
		}
		p.Add(l)
		switch i {
		case 0:
			p.Legend.Add("grid lines of one family (images)", l)
		case len(d.Lines) / 2:
			p.Legend.Add("grid lines of the other family", l)
		}
	}
	pts := make(plotter.XYs, len(d.Points))
	for i, y := range d.Points {
		pts[i] = plotter.XY{X: y[0], Y: y[1]}
	}
	if len(pts) > 0 {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Radius, sc.GlyphStyle.Color = vg.Points(4), color.Black
		p.Add(sc)
		p.Legend.Add("data points", sc)
	}
	plotx.Readable(p)
	return p, nil
}

// plotFigure renders one plot of the result at the figures' size.
func plotFigure(name, caption string, mk func() (*plot.Plot, error)) *report.Figure {
	return &report.Figure{Name: name, Caption: caption, Render: func(format string) ([]byte, error) {
		p, err := mk()
		if err != nil {
			return nil, err
		}
		plotx.Readable(p)
		return plotx.Bytes(p, 19*vg.Centimeter, 11*vg.Centimeter, format)
	}}
}

// figures are the result's figures (none when their data were not computed).
func (res *Result) figures() []*report.Figure {
	if len(res.CurvesPublished) == 0 {
		return nil
	}
	fs := []*report.Figure{
		plotFigure(FigAsymPublished, "published protocol, non-affine data: mean off-diagonal asymmetry (%) of the "+
			"script's matrix along the chain, per schedule", func() (*plot.Plot, error) {
			p, err := curvePlot("Published protocol, non-affine: mean off-diagonal asymmetry along the chain",
				"t (from T = 0.999 down to 0)", "mean off-diagonal asymmetry (%)", res.CurvesPublished, false)
			if err == nil {
				p.X.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}
			}
			return p, err
		}),
		plotFigure(FigAsymReference, "converged map, non-affine data: mean asymmetry I(Φ) (%) versus the noise level "+
			"σ/α; the four schedules' curves coincide", func() (*plot.Plot, error) {
			p, err := curvePlot("Converged map, non-affine: mean I(Φ) of the map to time t",
				"noise level σ(t)/α(t) (from large to small)", "mean asymmetry I (%)", res.CurvesReference, true)
			if err == nil {
				p.X.Scale = plot.InvertedScale{Normalizer: plot.LogScale{}}
			}
			return p, err
		}),
		plotFigure(FigHistPublished, "published protocol, non-affine data: histogram of the per-chain off-diagonal "+
			"rate (%), the paper's values dashed", func() (*plot.Plot, error) {
			return histPlot("Published protocol, non-affine: per-chain rate", "off-diagonal asymmetry (%)", res.HistPublished, PaperReported)
		}),
		plotFigure(FigHistReference, "converged map, non-affine data: histogram of the per-chain asymmetry I(Φ) (%); "+
			"the four schedules coincide", func() (*plot.Plot, error) {
			return histPlot("Converged map, non-affine: per-chain I(Φ)", "asymmetry I (%)", res.HistReference, nil)
		}),
	}
	if len(res.Deformations) > 0 {
		fs = append(fs, &report.Figure{Name: FigDeformation, Caption: "a grid of x(T) deformed by the VP map down to σ = 0.2, affine versus non-affine data",
			Render: func(format string) ([]byte, error) {
				var row []*plot.Plot
				for _, d := range res.Deformations {
					dp, err := deformationPlot(d)
					if err != nil {
						return nil, err
					}
					row = append(row, dp)
				}
				return plotx.TilesBytes(row, len(row), 14*vg.Centimeter, 13*vg.Centimeter, format)
			}})
	}
	return fs
}

// Figures renders the figures of the result as PNG, by file name (empty
// when the figure data were not computed).
func (res *Result) Figures() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range res.figures() {
		b, err := f.PNG()
		if err != nil {
			return nil, err
		}
		out[f.Name] = b
	}
	return out, nil
}

// FigureNames lists the figures in display order.
var FigureNames = []string{FigAsymPublished, FigAsymReference, FigHistPublished, FigHistReference, FigDeformation}
