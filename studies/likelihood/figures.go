package likelihood

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/models"
)

// pngPanel is the width of one panel of a tiled figure.
const pngPanel = 4 * vg.Inch

// lossFigure: the DF-TM loss curve (Figure 1a), with ν_θ's and the ε-network's.
func (r *Result) lossFigure(format string) ([]byte, error) {
	var ps []*plot.Plot
	for _, name := range []string{"dftm", "dftm-c", "eps"} {
		rec := r.Records[name]
		if rec == nil || len(rec.Curve.Step) == 0 {
			continue
		}
		xs := make([]float64, len(rec.Curve.Step))
		for i, s := range rec.Curve.Step {
			xs[i] = float64(s)
		}
		title := map[string]string{"dftm": "DF-TM network (Figure 1a)", "dftm-c": "centred DF-TM network", "eps": "ε-network (DSM)"}[name]
		p, err := plotx.LogLines(title, "training step", fmt.Sprintf("training loss (%d-step mean)", curveSpan(rec.Curve)), false, true,
			plotx.Series{X: xs, Y: rec.Curve.Loss})
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return plotx.TilesBytes(ps, len(ps), pngPanel, 3*vg.Inch, format)
}

// curveSpan is the number of steps each point of curve averages (models.Loop's
// CurveEvery): the gap between its first two points.
func curveSpan(curve models.LossCurve) int64 {
	if len(curve.Step) < 2 {
		return curve.Step[0]
	}
	return curve.Step[1] - curve.Step[0]
}

// hasCurves says whether a network's record has a loss curve for
// lossFigure.
func (r *Result) hasCurves() bool {
	for _, name := range []string{"dftm", "dftm-c", "eps"} {
		if rec := r.Records[name]; rec != nil && len(rec.Curve.Step) > 0 {
			return true
		}
	}
	return false
}

// guidanceFigure: mean NLL against mean log p(c|x) with error bars, one
// curve per protocol, each point labelled by its scale.
func (r *Result) guidanceFigure(format string) ([]byte, error) {
	if len(r.Guidance.Rows) == 0 {
		return nil, fmt.Errorf("likelihood: figure 1b: no guidance scales")
	}
	var ps []*plot.Plot
	for k, proto := range []string{"paper protocol (Euler 10, first step left out)", fmt.Sprintf("Heun %d steps from t₁", r.Config.BPDSteps)} {
		pts := plotx.Series{Name: "guidance scales", Points: true, Bars: true}
		var labels []string
		for _, row := range r.Guidance.Rows {
			y, e := row.PaperBPD, row.PaperSE
			if k == 1 {
				y, e = row.ConvBPD, row.ConvSE
			}
			pts.X, pts.XLo, pts.XHi = append(pts.X, row.LogProb), append(pts.XLo, row.LogProb-row.LogProbSE), append(pts.XHi, row.LogProb+row.LogProbSE)
			pts.Y, pts.Lo, pts.Hi = append(pts.Y, y), append(pts.Lo, y-e), append(pts.Hi, y+e)
			labels = append(labels, fmt.Sprintf("s=%g", row.Scale))
		}
		p, err := plotx.Lines("NLL vs classifier log p(c|x): "+proto, "mean classifier log p(c | x) (CLIP-score stand-in)", "mean NLL (bits/dim, DF-TM)",
			pts, plotx.Series{Name: "bars: ± 1 standard error", Note: true},
			plotx.Series{Name: fmt.Sprintf("s = %g … %g along the curve", r.Guidance.Rows[0].Scale, r.Guidance.Rows[len(r.Guidance.Rows)-1].Scale), Note: true},
			plotx.Series{Name: "(labelled where there is room)", Note: true})
		if err != nil {
			return nil, err
		}
		labs, _, err := placeLabels(p, pts, labels, 8*vg.Inch, 4*vg.Inch)
		if err != nil {
			return nil, err
		}
		p.Add(labs...)
		ps = append(ps, p)
	}
	return plotx.TilesBytes(ps, 1, 8*vg.Inch, 4*vg.Inch, format)
}

// placeLabels gives point i the label labels[i] at a corner of it, or
// right, left, above or below it, wherever the label overlaps no label
// already placed, no point and no error bar, and stays inside the data area
// (measured on a w×h canvas); points in order, a point with no room stays
// unlabelled. It returns the
// labels to add and how many were placed. The points and their bars are
// those of pts (X, Y, and the intervals XLo–XHi and Lo–Hi when set).
//
// The data area is measured on the plot alone; in TilesBytes, plot.Align
// may make it a little smaller, so the gaps are generous.
func placeLabels(p *plot.Plot, pts plotx.Series, labels []string, w, h vg.Length) ([]plot.Plotter, int, error) {
	dc := p.DataCanvas(draw.New(vgimg.New(w, h)))
	at := func(x, y float64) vg.Point { return vg.Point{X: dc.X(p.X.Norm(x)), Y: dc.Y(p.Y.Norm(y))} }
	px := func(i int) vg.Point { return at(pts.X[i], pts.Y[i]) }
	ends := func(lo, hi []float64, i int, v float64) (float64, float64) {
		if lo == nil {
			return v, v
		}
		return lo[i], hi[i]
	}
	sty := plot.New().X.Tick.Label // a plain text style of the plot's font
	sty.Font.Size = vg.Points(8)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	const gap, dot = vg.Length(4), vg.Length(3)
	var placed []vg.Rectangle // obstacles: points and their bars, then labels
	for i, x := range pts.X {
		y := pts.Y[i]
		placed = append(placed, vg.Rectangle{Min: px(i).Sub(vg.Point{X: dot, Y: dot}), Max: px(i).Add(vg.Point{X: dot, Y: dot})})
		xl, xh := ends(pts.XLo, pts.XHi, i, x)
		lo, hi := at(xl, y), at(xh, y)
		placed = append(placed, vg.Rectangle{Min: vg.Point{X: lo.X, Y: lo.Y - dot}, Max: vg.Point{X: hi.X, Y: hi.Y + dot}})
		yl, yh := ends(pts.Lo, pts.Hi, i, y)
		lo, hi = at(x, yl), at(x, yh)
		placed = append(placed, vg.Rectangle{Min: vg.Point{X: lo.X - dot, Y: lo.Y}, Max: vg.Point{X: hi.X + dot, Y: hi.Y}})
	}
	overlaps := func(a, b vg.Rectangle) bool {
		return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
	}
	var out []plot.Plotter
	shown := 0
	for i, l := range labels {
		lw, lh := sty.Width(l), sty.Height(l)
		c := px(i)
		// the four corners first: they clear the point's own bars
		for _, off := range []vg.Point{{X: gap, Y: gap}, {X: -gap - lw, Y: gap}, {X: gap, Y: -gap - lh}, {X: -gap - lw, Y: -gap - lh},
			{X: gap, Y: -lh / 2}, {X: -gap - lw, Y: -lh / 2}, {X: -lw / 2, Y: gap}, {X: -lw / 2, Y: -gap - lh}} {
			r := vg.Rectangle{Min: c.Add(off), Max: c.Add(off).Add(vg.Point{X: lw, Y: lh})}
			if r.Min.X < dc.Min.X || r.Max.X > dc.Max.X || r.Min.Y < dc.Min.Y || r.Max.Y > dc.Max.Y {
				continue
			}
			free := true
			for _, q := range placed {
				if overlaps(r, q) {
					free = false
					break
				}
			}
			if !free {
				continue
			}
			placed = append(placed, r)
			lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: pts.X[i], Y: pts.Y[i]}}, Labels: []string{l}})
			if err != nil {
				return nil, 0, err
			}
			lab.TextStyle[0] = sty
			lab.Offset = off
			out = append(out, lab)
			shown++
			break
		}
	}
	return out, shown, nil
}

// fig2Figure: the per-class rows of samples ordered by NLL.
func (r *Result) fig2Figure(format string) ([]byte, error) {
	f := r.Fig2
	rows := f.Images
	if len(rows) == 0 {
		return nil, fmt.Errorf("likelihood: figure 2: no classes")
	}
	p, err := plotx.ImageGrid(fmt.Sprintf("ranked by NLL (scale %g)", f.Scale),
		"rank by NLL, 1 = lowest (bpd under each image)", "requested class", r.Image.H, r.Image.W, rows, f.BPD)
	if err != nil {
		return nil, err
	}
	h := vg.Length(float64(len(rows))*0.62*plotx.ImageRowScale(r.Image.H))*vg.Inch + 1.2*vg.Inch
	return plotx.Bytes(p, vg.Length(len(rows[0]))*0.62*vg.Inch+1.5*vg.Inch, h, format)
}

// truthFigure: relative error against t per estimator, train and test.
func (r *Result) truthFigure(format string) ([]byte, error) {
	var ps []*plot.Plot
	for _, split := range []string{"train", "test"} {
		var series []plotx.Series
		for _, e := range r.Truth.Estimators {
			var xs, ys []float64
			for _, row := range r.Truth.Rows {
				if row.Split == split {
					xs, ys = append(xs, row.T), append(ys, 100*row.RelErr[e])
				}
			}
			series = append(series, plotx.Series{Name: e, X: xs, Y: ys, Points: true})
		}
		// say which curves coincide (within 10 % of each other at every t),
		// with the largest gap between them in percentage points
		curves := len(series)
		for i := range curves {
			for j := i + 1; j < curves; j++ {
				same, gap := len(series[i].Y) > 0, 0.0
				for k := range series[i].Y {
					a, b := series[i].Y[k], series[j].Y[k]
					same = same && math.Abs(a-b) <= 0.1*math.Max(math.Abs(a), math.Abs(b))
					gap = math.Max(gap, math.Abs(a-b))
				}
				if same {
					series = append(series, plotx.Series{Name: fmt.Sprintf("%s and %s lie on each other:", series[i].Name, series[j].Name), Note: true},
						plotx.Series{Name: fmt.Sprintf("  at most %.2g percentage points apart", gap), Note: true})
				}
			}
		}
		series = append(series, plotx.Series{Name: fmt.Sprintf("means over the queries (%d per point; truth.md)", r.truthQueries(split)), Note: true})
		plotx.Distinct(series)
		title := fmt.Sprintf("trace error vs the exact empirical Fisher (x₀ from %s set)", split)
		p, err := plotx.LogLines(title, "t", "relative error of tr F (%)", true, true, series...)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return plotx.TilesBytes(ps, 1, 8*vg.Inch, 3.6*vg.Inch, format)
}

// truthQueries is the number of queries behind each row of a split.
func (r *Result) truthQueries(split string) int {
	for _, row := range r.Truth.Rows {
		if row.Split == split {
			return row.Queries
		}
	}
	return 0
}

// covFigure: exact vs network tr Cov[x₀|x_t]/d against t, on a
// symmetric-log axis: the networks' implied covariance can be negative (an
// impossible value for a covariance, which the figure shows and counts).
func (r *Result) covFigure(format string) ([]byte, error) {
	var series []plotx.Series
	neg, zero, n, top := 0, 0, 0, 0.0
	for _, split := range []string{"train", "test"} {
		var xs, ex, nw []float64
		for _, row := range r.Truth.Rows {
			if row.Split == split {
				xs, ex, nw = append(xs, row.T), append(ex, row.ExactCov), append(nw, row.NetCov)
				n++
				if row.NetCov < 0 {
					neg++
				}
				if math.Abs(row.ExactCov) < 1e-12 {
					zero++
				}
				top = math.Max(top, math.Max(math.Abs(row.ExactCov), math.Abs(row.NetCov)))
			}
		}
		series = append(series, plotx.Series{Name: "empirical mixture (exact), " + split, X: xs, Y: ex},
			plotx.Series{Name: "networks (t_θ − ‖ȳ_θ‖²/d), " + split, X: xs, Y: nw})
	}
	// linear within ±c, c five decades below the largest value
	c := 1e-5
	if top > 0 {
		c = math.Pow(10, math.Ceil(math.Log10(top))-5)
	}
	series = append(plotx.Distinct(series),
		plotx.Series{Name: fmt.Sprintf("below 0: networks at %d of %d (t, split) points,", neg, n), Note: true},
		plotx.Series{Name: "impossible for a covariance; the mixture's are ≥ 0", Note: true},
		plotx.Series{Name: fmt.Sprintf("mixture at 0 (< 1e-12): %d of %d points (collapse on one image)", zero, n), Note: true},
		plotx.Series{Name: "means over the queries; values: truth.md", Note: true})
	series = append(series, plotx.Series{Name: fmt.Sprintf("y: symmetric log, linear within ±%g", c), Note: true})
	p, err := plotx.LogLines("posterior spread: memorising mixture vs networks", "t (log scale)", "tr Cov[x₀ | x_t] / d", true, false, series...)
	if err != nil {
		return nil, err
	}
	plotx.SymLogY(p, c)
	return plotx.Bytes(p, 9*vg.Inch, 5*vg.Inch, format)
}

// scaleGridFigure: one sample per class (columns) at every guidance scale (rows).
func (r *Result) scaleGridFigure(format string) ([]byte, error) {
	var rows [][]*mat.Dense
	for _, row := range r.Guidance.Rows {
		rows = append(rows, row.Examples)
	}
	p, err := plotx.ImageGrid("class-conditional DDIM samples by guidance scale", "requested class", "guidance scale s (row)", r.Image.H, r.Image.W, rows, nil)
	if err != nil {
		return nil, err
	}
	var xt []plot.Tick
	var names []string
	for c := range len(rows[0]) {
		xt = append(xt, plot.Tick{Value: float64(c) + 0.5, Label: fmt.Sprint(c)})
	}
	for _, row := range r.Guidance.Rows {
		names = append(names, fmt.Sprint(row.Scale))
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)
	plotx.LabelRows(p, names)
	return plotx.Bytes(p, 10*0.55*vg.Inch+1.3*vg.Inch, vg.Length(len(rows))*0.55*vg.Inch+1.1*vg.Inch, format)
}
