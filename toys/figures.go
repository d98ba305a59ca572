package toys

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/internal/atomicfile"
)

// writeFigures draws the heat maps, the error-versus-t curves, the model's
// samples and the loss curves (the Figure 1a analogue).
func (r *Result) writeFigures(dir string) error {
	if err := r.heatFigure(filepath.Join(dir, "trace_fields.png")); err != nil {
		return err
	}
	if r.learned() {
		if err := r.errorFigure(filepath.Join(dir, "relerr_vs_t.png")); err != nil {
			return err
		}
	}
	if r.Samples != nil {
		if err := r.samplesFigure(filepath.Join(dir, "samples.png")); err != nil {
			return err
		}
	}
	if len(r.Losses) > 0 {
		if err := r.lossFigure(filepath.Join(dir, "loss.png")); err != nil {
			return err
		}
	}
	return nil
}

// heatFigure tiles the normalised trace fields: one row per time, one
// column per method, a shared colour range per row.
func (r *Result) heatFigure(path string) error {
	if len(r.Heat) == 0 {
		return nil
	}
	methods := r.Methods
	rows := make([][]*plot.Plot, len(r.Heat))
	for i, h := range r.Heat {
		// the field is ≤ 1 and dips far below 0 on thin ridges between
		// modes: saturate below −2 so the bulk stays readable
		lo := math.Inf(1)
		for _, z := range h.Fields[MethodExact] {
			for _, v := range z {
				lo = math.Min(lo, v)
			}
		}
		lo = math.Max(lo, -2)
		for _, m := range methods {
			p, err := plotx.HeatMap(fmt.Sprintf("%s, t = %.2g (σ = %.2g)", m, h.T, r.Schedule.Sigma(h.T)), h.Xs, h.Ys, h.Fields[m],
				plotx.HeatOptions{Min: lo, Max: 1, ColorBarLabel: "σ² tr F / d"})
			if err != nil {
				return err
			}
			rows[i] = append(rows[i], p)
		}
	}
	return saveTiles(path, rows, 3.6*vg.Inch)
}

// saveTiles draws plots[row][col] on one PNG, each tile size×(0.85 size).
func saveTiles(path string, plots [][]*plot.Plot, size vg.Length) error {
	nr, nc := len(plots), len(plots[0])
	w, h := size*vg.Length(nc), 0.85*size*vg.Length(nr)
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: nr, Cols: nc, PadX: vg.Millimeter, PadY: vg.Millimeter, PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	return atomicfile.Write(path, func(out io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(out)
		return err
	})
}

// errorFigure is the relative trace error versus t for each learned method, with a
// band of ± one standard deviation over seeds, on a log scale.
func (r *Result) errorFigure(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Fisher-trace relative error, %s, %s", r.Config.Dataset, r.Schedule.Name())
	p.X.Label.Text, p.Y.Label.Text = "t", "Σ|tr̂ − tr| / Σ|tr|"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	for k, m := range []string{MethodVJP, MethodDFTM, MethodDFTMC} {
		col := plotutil.Color(k)
		var line, upper, lower plotter.XYs
		for _, row := range r.Curve {
			s := row.TraceErr[m]
			if !(s.Mean > 0) {
				continue
			}
			line = append(line, plotter.XY{X: row.T, Y: s.Mean})
			upper = append(upper, plotter.XY{X: row.T, Y: s.Mean + s.Std})
			lower = append(lower, plotter.XY{X: row.T, Y: math.Max(s.Mean-s.Std, s.Mean/10)})
		}
		if len(line) == 0 {
			continue
		}
		band := append(plotter.XYs{}, upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			band = append(band, lower[i])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return err
		}
		c := color.NRGBAModel.Convert(col).(color.NRGBA)
		c.A = 60
		poly.Color, poly.LineStyle.Width = c, 0
		l, pts, err := plotter.NewLinePoints(line)
		if err != nil {
			return err
		}
		l.Color, pts.Color = col, col
		p.Add(poly, l, pts)
		if m == MethodDFTMC {
			p.Legend.Add(m+" (ours, centred)", l, pts)
			continue // beyond the paper: no paper points
		}
		p.Legend.Add(m+" (ours)", l, pts)
		if !r.hasPaper() {
			continue
		}
		// the paper's points (chessboard, VE)
		var paper plotter.XYs
		lo, _ := r.Schedule.Interval()
		for i, t := range paperTimes {
			paper = append(paper, plotter.XY{X: math.Max(t, lo), Y: PaperTable2[m][i] / 100})
		}
		sc, err := plotter.NewScatter(paper)
		if err != nil {
			return err
		}
		sc.Color, sc.Shape = col, draw.CrossGlyph{}
		sc.Radius = vg.Points(4)
		p.Add(sc)
		p.Legend.Add(m+" (paper)", sc)
	}
	return plotx.SavePNG(p, 6*vg.Inch, 4.5*vg.Inch, path)
}

// samplesFigure shows the data next to the trained model's PF-ODE samples.
func (r *Result) samplesFigure(path string) error {
	mk := func(title string, pts interface {
		Dims() (int, int)
		At(int, int) float64
	}, col color.Color) (*plot.Plot, error) {
		n, _ := pts.Dims()
		xy := make(plotter.XYs, n)
		for i := range xy {
			xy[i] = plotter.XY{X: pts.At(i, 0), Y: pts.At(i, 1)}
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, err
		}
		sc.Radius, sc.Color, sc.Shape = vg.Points(0.8), col, draw.CircleGlyph{}
		p := plot.New()
		p.Title.Text = title
		p.Add(sc)
		e := r.Config.HeatExtent
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -e, e, -e, e
		return p, nil
	}
	a, err := mk(fmt.Sprintf("data (%d points)", r.Config.N), r.Data, color.Black)
	if err != nil {
		return err
	}
	b, err := mk(fmt.Sprintf("PF-ODE samples of the score net (%d)", r.Config.Samples), r.Samples, plotutil.Color(0))
	if err != nil {
		return err
	}
	return saveTiles(path, [][]*plot.Plot{{a, b}}, 4.5*vg.Inch)
}

// lossFigure draws the training losses of both networks for every seed
// (the paper's Figure 1a shows the DF-TM loss).
func (r *Result) lossFigure(path string) error {
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
		title := map[string]string{"score": "score network (DSM, ε-loss)", "df-tm": "DF-TM network (|t_θ − ‖x₀‖²/d|²)",
			"df-tm-c": "centred DF-TM network, ours (|ν_θ − ‖ε̂_θ − ε‖²/d|²)"}[net]
		p, err := plotx.LogLines(title, "step", "training loss", false, true, series...)
		if err != nil {
			return err
		}
		rows = append(rows, p)
	}
	return saveTiles(path, [][]*plot.Plot{rows}, 4.5*vg.Inch)
}

// DatasetsFigure draws n points of every data set of Generators side by
// side (seeded).
func DatasetsFigure(path string, n int, seed uint64) error {
	var row []*plot.Plot
	for _, name := range Names() {
		x, err := Sample(name, n, seed)
		if err != nil {
			return err
		}
		xy := make(plotter.XYs, n)
		for i := range xy {
			xy[i] = plotter.XY{X: x.At(i, 0), Y: x.At(i, 1)}
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		sc.Radius, sc.Color, sc.Shape = vg.Points(0.7), color.Black, draw.CircleGlyph{}
		p := plot.New()
		p.Title.Text = name
		p.Add(sc)
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -5, 5, -5, 5
		row = append(row, p)
	}
	return saveTiles(path, [][]*plot.Plot{row}, 3*vg.Inch)
}
