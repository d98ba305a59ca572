package access

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/toys"
)

// figures are the heat maps, the error-versus-t curves, the model's
// samples, the loss curves (the Figure 1a analogue) and, for the
// checkerboard, every data set; each renders on demand.
func (r *Result) figures() []*report.Figure {
	var fs []*report.Figure
	if len(r.Heat) > 0 {
		fs = append(fs, &report.Figure{Name: "trace_fields.png", Render: r.heatFigure,
			Caption: "σ² tr F / d over the plane, exact and by each learned method (rows: times); one colour range [−1, 1] centred at 0 (white) " +
				"in every panel: black below −1, gold above 1 (beyond the bound d/σ²), each panel's extremes beside its colour bar"})
	}
	if r.learned() {
		fs = append(fs, &report.Figure{Name: "relerr_vs_t.png", Render: r.errorFigure,
			Caption: "relative Fisher-trace error Σ|est − exact| / Σ|exact| (%) versus t, mean ± sd over seeds, with the paper's Table 2 values"})
	}
	if r.Samples != nil {
		fs = append(fs, &report.Figure{Name: "samples.png", Render: r.samplesFigure,
			Caption: "the data beside PF-ODE samples of the score network; the title gives the samples' mean distance to the nearest data point " +
				"against the data's own, and says when the samples do not reproduce the data"})
	}
	if len(r.Losses) > 0 {
		fs = append(fs, &report.Figure{Name: "loss.png", Render: r.lossFigure,
			Caption: "training losses of the score, DF-TM and centred DF-TM networks (Figure 1a analogue)"})
	}
	if r.Config.Dataset == "checkerboard" {
		n, seed := r.Config.N, r.Config.DataSeed
		fs = append(fs, &report.Figure{Name: "datasets.png", Caption: "every 2-D data set of the toys, as sampled",
			Render: func(format string) ([]byte, error) { return DatasetsFigure(format, n, seed) }})
	}
	return fs
}

// heatFigure tiles the normalised trace fields: one row per time, one
// column per method, one colour range for all.
func (r *Result) heatFigure(format string) ([]byte, error) {
	methods := r.Methods
	rows := make([][]*plot.Plot, len(r.Heat))
	for i, h := range r.Heat {
		// σ² tr F / d ≤ 1 for the exact field, which dips far below 0 on
		// thin ridges between modes. One colour range for every row,
		// centred at 0 (white): the saturation colours mean the same in
		// every panel (black: below −1; gold: above 1, beyond the bound
		// d/σ²), and HeatMap names each panel's extremes beside them.
		const lo = -1.0
		for _, m := range methods {
			p, err := plotx.HeatMap(fmt.Sprintf("%s, t = %.2g (σ = %.2g)", m, h.T, r.Schedule.Sigma(h.T)), h.Xs, h.Ys, h.Fields[m],
				plotx.HeatOptions{Min: lo, Max: 1 + 1e-9, Diverging: true, XLabel: "x₁", YLabel: "x₂"})
			if err != nil {
				return nil, err
			}
			rows[i] = append(rows[i], p)
		}
	}
	return tiles(rows, 3.6*vg.Inch, format)
}

// tiles draws plots[row][col] on one picture, each tile size×(0.85 size).
func tiles(plots [][]*plot.Plot, size vg.Length, format string) ([]byte, error) {
	var flat []*plot.Plot
	for _, row := range plots {
		flat = append(flat, row...)
	}
	return plotx.TilesBytes(flat, len(plots[0]), size, 0.85*size, format)
}

// errorFigure is the relative trace error (in percent, as in table2.md)
// versus t for each learned method, with a band of ± one standard deviation
// over seeds, on a log scale.
func (r *Result) errorFigure(format string) ([]byte, error) {
	var series []plotx.Series
	for k, m := range []string{MethodVJP, MethodDFTM, MethodDFTMC} {
		ours := plotx.Series{Name: m + " (ours)", Points: true, Color: plotutil.Color(k)}
		if m == MethodDFTMC {
			ours.Name = m + " (ours, centred)"
		}
		for _, row := range r.Curve {
			s := row.TraceErr[m]
			if !(s.Mean > 0) {
				continue
			}
			// the band's lower end stops at a tenth of the mean: a log axis has no 0
			ours.X, ours.Y = append(ours.X, row.T), append(ours.Y, 100*s.Mean)
			ours.Lo, ours.Hi = append(ours.Lo, 100*math.Max(s.Mean-s.Std, s.Mean/10)), append(ours.Hi, 100*(s.Mean+s.Std))
		}
		if len(ours.X) == 0 {
			continue
		}
		series = append(series, ours)
		if m == MethodDFTMC || !r.hasPaper() {
			continue // DF-TM-c is beyond the paper: no paper points
		}
		// the paper's points (chessboard, VE)
		paper := plotx.Series{Name: m + " (paper)", NoLine: true, Shape: draw.CrossGlyph{}, Color: ours.Color}
		lo, _ := r.Schedule.Interval()
		for i, t := range paperTimes {
			paper.X, paper.Y = append(paper.X, math.Max(t, lo)), append(paper.Y, PaperTable2[m][i])
		}
		series = append(series, paper)
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("toys: relerr_vs_t: no positive trace error to draw")
	}
	if len(r.Config.EvalSeeds)*max(len(r.Config.TrainSeeds), 1) > 1 {
		series = append(series, plotx.Series{Name: "bands: ± 1 sd over seeds", Note: true})
	}
	title := fmt.Sprintf("Fisher-trace relative error, %s, %s", r.Config.Dataset, r.Schedule.Name())
	p, err := plotx.LogLines(title, "t", "relative error of tr F (%)", false, true, series...)
	if err != nil {
		return nil, err
	}
	return plotx.Bytes(p, 7.5*vg.Inch, 4.5*vg.Inch, format)
}

// samplesFigure shows the data next to the trained model's PF-ODE samples.
func (r *Result) samplesFigure(format string) ([]byte, error) {
	mk := func(title string, pts *mat.Dense, col color.Color) (*plot.Plot, error) {
		return pointsPlot(title, pts, vg.Points(0.8), col, r.Config.HeatExtent)
	}
	a, err := mk(fmt.Sprintf("data (%d points)", r.Config.N), r.Data, color.Black)
	if err != nil {
		return nil, err
	}
	title := fmt.Sprintf("PF-ODE samples of the score net (%d)", r.Config.Samples)
	ds, dd := nearestDistance(r.Samples, r.Data, false), nearestDistance(r.Data, r.Data, true)
	title += fmt.Sprintf("\nmean distance to the nearest data point %.2g (data's own %.2g)", ds, dd)
	if ds > 3*dd {
		// three short lines: one long line ran past the panel
		tc := r.Config.Train
		title += fmt.Sprintf("\nthe samples do NOT reproduce the data:\nthe %d×%d score net (%d steps) did not learn it", tc.Width, tc.Depth, tc.Steps)
	}
	b, err := mk(title, r.Samples, plotutil.Color(0))
	if err != nil {
		return nil, err
	}
	return tiles([][]*plot.Plot{{a, b}}, 4.5*vg.Inch, format)
}

// lossFigure draws the training losses of both networks for every seed
// (the paper's Figure 1a shows the DF-TM loss).
func (r *Result) lossFigure(format string) ([]byte, error) {
	var rows []*plot.Plot
	for _, net := range []string{"score", "df-tm", "df-tm-c"} {
		var series []plotx.Series
		for _, c := range r.Losses {
			if c.Net != net {
				continue
			}
			x := make([]float64, len(c.Step))
			for i, s := range c.Step {
				x[i] = float64(s)
			}
			series = append(series, plotx.Series{Name: fmt.Sprintf("seed %d", c.Seed), X: x, Y: c.Loss})
		}
		if len(series) == 0 {
			continue
		}
		title := map[string]string{"score": "score network: DSM loss ‖ε̂θ − ε‖²", "df-tm": "DF-TM network: |tθ − ‖x₀‖²/d|²",
			"df-tm-c": "centred DF-TM (ours): |νθ − ‖ε̂θ − ε‖²/d|²"}[net]
		p, err := plotx.LogLines(title, "training step", "batch loss", false, true, series...)
		if err != nil {
			return nil, err
		}
		rows = append(rows, p)
	}
	return tiles([][]*plot.Plot{rows}, 4.8*vg.Inch, format)
}

// DatasetsFigure draws n points of every data set of toys.Generators side by
// side (seeded), as "png" or "svg".
func DatasetsFigure(format string, n int, seed uint64) ([]byte, error) {
	var row []*plot.Plot
	for _, name := range toys.Names() {
		x, err := toys.Sample(name, n, seed)
		if err != nil {
			return nil, err
		}
		p, err := pointsPlot(name, x, vg.Points(0.7), color.Black, 5)
		if err != nil {
			return nil, err
		}
		row = append(row, p)
	}
	return tiles([][]*plot.Plot{row}, 3*vg.Inch, format)
}

// pointsPlot is the rows of pts [n, 2] as dots of radius r in colour col,
// on the square [−extent, extent]², titled title.
func pointsPlot(title string, pts *mat.Dense, r vg.Length, col color.Color, extent float64) (*plot.Plot, error) {
	n, _ := pts.Dims()
	xy := make(plotter.XYs, n)
	for i := range xy {
		xy[i] = plotter.XY{X: pts.At(i, 0), Y: pts.At(i, 1)}
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return nil, err
	}
	sc.Radius, sc.Color, sc.Shape = r, col, draw.CircleGlyph{}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = "x₁", "x₂"
	p.Add(sc)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -extent, extent, -extent, extent
	plotx.Readable(p)
	return p, nil
}

// nearestDistance is the mean, over at most 2 000 rows of a, of the
// Euclidean distance to the nearest row of b (other than the row itself
// when self): how far samples lie from the data, against the data's own
// spacing.
func nearestDistance(a, b interface {
	Dims() (int, int)
	At(int, int) float64
}, self bool) float64 {
	na, d := a.Dims()
	nb, _ := b.Dims()
	n := min(na, 2000)
	sum := 0.0
	for i := 0; i < n; i++ {
		best := math.Inf(1)
		for j := 0; j < nb; j++ {
			if self && i == j {
				continue
			}
			s := 0.0
			for k := 0; k < d; k++ {
				v := a.At(i, k) - b.At(j, k)
				s += v * v
			}
			best = math.Min(best, s)
		}
		sum += math.Sqrt(best)
	}
	return sum / float64(n)
}
