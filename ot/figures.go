package ot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"path/filepath"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// scheduleColors gives each schedule of Table 3 one colour in every figure.
var scheduleColors = map[string]color.Color{
	"ve":    color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"vp":    color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"subvp": color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	"edm":   color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// Figure names written by DrawFigures (PNG, in the output folder).
const (
	FigAsymPublished = "asym_vs_t_published.png"
	FigAsymReference = "asym_vs_noise_reference.png"
	FigHistPublished = "hist_published_offdiag.png"
	FigHistReference = "hist_reference.png"
	FigDeformation   = "grid_deformation.png"
)

func renderPNG(w, h vg.Length, draw func(dc draw.Canvas)) ([]byte, error) {
	img := vgimg.New(w, h)
	draw(drawCanvas(img))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func drawCanvas(img *vgimg.Canvas) draw.Canvas { return draw.New(img) }

func renderPlot(p *plot.Plot) ([]byte, error) {
	return renderPNG(16*vg.Centimeter, 11*vg.Centimeter, p.Draw)
}

func curvePlot(title, xlabel, ylabel string, curves []Curve, logX bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, ylabel
	if logX {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	p.Legend.Top = true
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
	p.Add(plotter.NewGrid())
	return p, nil
}

// histPlot draws per-schedule histograms on common bins as step lines, with
// optional vertical marks (e.g. the paper's reported values).
func histPlot(title, xlabel string, h map[string][]float64, marks map[string]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "fraction of chains"
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
	p.Legend.Top = true
	return p, nil
}

func deformationPlot(d Deformation) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s data: grid of x_T mapped to σ = 0.2 (VP)", d.Data)
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
	}
	return p, nil
}

// Figures renders the figures of the result as PNG, by file name (empty
// when the figure data were not computed).
func (res *Result) Figures() (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(res.CurvesPublished) == 0 {
		return out, nil
	}
	add := func(name string, p *plot.Plot, err error) error {
		if err != nil {
			return err
		}
		b, err := renderPlot(p)
		if err != nil {
			return err
		}
		out[name] = b
		return nil
	}
	p, err := curvePlot("Published protocol, non-affine: mean off-diagonal asymmetry along the chain",
		"t (from T = 0.999 down to 0)", "mean asymmetry (off-diag) %", res.CurvesPublished, false)
	if err == nil {
		p.X.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}}
	}
	if err := add(FigAsymPublished, p, err); err != nil {
		return nil, err
	}
	p, err = curvePlot("Converged map, non-affine: mean I(Φ_t) along the chain",
		"noise level σ(t)/α(t)", "mean asymmetry I %", res.CurvesReference, true)
	if err == nil {
		p.X.Scale = plot.InvertedScale{Normalizer: plot.LogScale{}}
	}
	if err := add(FigAsymReference, p, err); err != nil {
		return nil, err
	}
	p, err = histPlot("Published protocol, non-affine: per-chain rate (dashed: paper)", "off-diagonal asymmetry %", res.HistPublished, PaperReported)
	if err := add(FigHistPublished, p, err); err != nil {
		return nil, err
	}
	p, err = histPlot("Converged map, non-affine: per-chain I(Φ)", "asymmetry I %", res.HistReference, nil)
	if err := add(FigHistReference, p, err); err != nil {
		return nil, err
	}
	var row []*plot.Plot
	for _, d := range res.Deformations {
		dp, err := deformationPlot(d)
		if err != nil {
			return nil, err
		}
		row = append(row, dp)
	}
	if len(row) > 0 {
		b, err := renderPNG(vg.Length(len(row))*14*vg.Centimeter, 13*vg.Centimeter, func(dc draw.Canvas) {
			cs := plot.Align([][]*plot.Plot{row}, draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Centimeter, PadTop: vg.Centimeter / 3, PadBottom: vg.Centimeter / 6}, dc)
			for i, p := range row {
				p.Draw(cs[0][i])
			}
		})
		if err != nil {
			return nil, err
		}
		out[FigDeformation] = b
	}
	return out, nil
}

// DrawFigures writes the figures of the result into dir (atomically).
func (res *Result) DrawFigures(dir string) error {
	figs, err := res.Figures()
	if err != nil {
		return err
	}
	for _, name := range FigureNames {
		if b, ok := figs[name]; ok {
			if err := atomicfile.WriteFile(filepath.Join(dir, name), b); err != nil {
				return err
			}
		}
	}
	return nil
}

// FigureNames lists the figures in display order.
var FigureNames = []string{FigAsymPublished, FigAsymReference, FigHistPublished, FigHistReference, FigDeformation}
