package access

import (
	"fmt"
	"math"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

const fieldsPanel = 3.2 * vg.Inch

// TracePlots draws the normalised trace σ² tr F(x, t)/d for each time, with
// the data points on top. It is 1 for an isotropic Gaussian of variance σ²,
// ≤ 1 everywhere (F ≼ I/σ²), and negative between modes, down to about −30
// on the thin ridges: one symmetric-log colour scale (linear within ±1)
// covers every time's whole range, so nothing is clipped.
func (r *FieldsResult) TracePlots() ([]*plot.Plot, error) {
	var ps []*plot.Plot
	fields := make([][][]float64, len(r.Fields))
	lo, hi := math.Inf(1), 1.0
	for k, f := range r.Fields {
		z := make([][]float64, len(f.Trace))
		for i, row := range f.Trace {
			z[i] = make([]float64, len(row))
			for j, v := range row {
				z[i][j] = v * f.Sigma * f.Sigma / 2
				lo, hi = math.Min(lo, z[i][j]), math.Max(hi, z[i][j])
			}
		}
		fields[k] = z
	}
	for k, f := range r.Fields {
		p, err := plotx.HeatMap(fmt.Sprintf("σ² tr F / d at t = %g (σ = %.3g)", f.T, f.Sigma), r.Xs, r.Ys, fields[k],
			plotx.HeatOptions{XLabel: "x₁", YLabel: "x₂", Min: lo, Max: hi, SymLog: 1, ColorBarLabel: "σ² tr F / d (symmetric log)"})
		if err != nil {
			return nil, err
		}
		if err := r.addData(p); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// ScorePlots draws log q(x, t) as a heat map with the score field as
// arrows; the colour scale spans 12 nats below the maximum, and the
// colour bar marks the clipped lower range.
func (r *FieldsResult) ScorePlots() ([]*plot.Plot, error) {
	var ps []*plot.Plot
	for _, f := range r.Fields {
		p, err := plotx.HeatMap(fmt.Sprintf("log q(x, t) (colour) and score (arrows), t = %g", f.T), r.Xs, r.Ys, f.LogP,
			plotx.HeatOptions{XLabel: "x₁", YLabel: "x₂", Min: maxLogP(f.LogP) - 12, Max: maxLogP(f.LogP), ColorBarLabel: "log q (nats)"})
		if err != nil {
			return nil, err
		}
		if err := plotx.Quiver(p, f.ArrowXs, f.ArrowYs, f.ArrowU, f.ArrowV, 0); err != nil {
			return nil, err
		}
		if err := r.addData(p); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func maxLogP(z [][]float64) float64 {
	m := math.Inf(-1)
	for _, row := range z {
		for _, v := range row {
			m = math.Max(m, v)
		}
	}
	return m
}

func (r *FieldsResult) addData(p *plot.Plot) error {
	n, _ := r.Data.Dims()
	pts := make(plotter.XYs, n)
	for i := range pts {
		pts[i].X, pts[i].Y = r.Data.At(i, 0), r.Data.At(i, 1)
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	s.GlyphStyle.Shape = draw.CrossGlyph{}
	s.GlyphStyle.Radius = vg.Points(3)
	p.Add(s)
	return nil
}

// TracePNG is the trace panels side by side, for notebooks.
func (r *FieldsResult) TracePNG() ([]byte, error) { return r.traceFigure("png") }

// ScorePNG is the score panels side by side, for notebooks.
func (r *FieldsResult) ScorePNG() ([]byte, error) { return r.scoreFigure("png") }

func (r *FieldsResult) traceFigure(format string) ([]byte, error) {
	ps, err := r.TracePlots()
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes(ps, len(ps), fieldsPanel*1.1, fieldsPanel, format)
}

func (r *FieldsResult) scoreFigure(format string) ([]byte, error) {
	ps, err := r.ScorePlots()
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes(ps, len(ps), fieldsPanel*1.1, fieldsPanel, format)
}

// Summary is one row of the table: statistics of the trace field at time T.
type Summary struct {
	T, Sigma, MinTrace, MaxTrace, MeanTrace, NegativeFraction, IsotropicBound float64
}

// Summaries lists, per time, the range of tr F over the grid, the fraction of
// the grid where tr F < 0 (−log q_t is not convex there), and the bound d/σ².
func (r *FieldsResult) Summaries() []Summary {
	var out []Summary
	for _, f := range r.Fields {
		s := Summary{T: f.T, Sigma: f.Sigma, MinTrace: math.Inf(1), MaxTrace: math.Inf(-1), IsotropicBound: 2 / (f.Sigma * f.Sigma)}
		n := 0
		for _, row := range f.Trace {
			for _, v := range row {
				s.MinTrace = math.Min(s.MinTrace, v)
				s.MaxTrace = math.Max(s.MaxTrace, v)
				s.MeanTrace += v
				if v < 0 {
					s.NegativeFraction++
				}
				n++
			}
		}
		s.MeanTrace /= float64(n)
		s.NegativeFraction /= float64(n)
		out = append(out, s)
	}
	return out
}

// Report holds summary.md/.csv, trace.png/.svg and score.png.
func (r *FieldsResult) Report() (*report.Report, error) {
	t := &report.Table{Name: "summary",
		Title: fmt.Sprintf("# Exact Fisher trace of a %d-point 2-D Dirac mixture (%s schedule, %d×%d grid on [−%g, %g]²)",
			rows(r.Data), r.Schedule.Name(), r.Config.Grid, r.Config.Grid, r.Config.Extent, r.Config.Extent),
		Caption: "range of the exact tr F over the grid per time, against the bound d/σ², and where it is negative",
		Columns: []report.Column{
			{Name: "t"},
			{Name: "σ(t)", Key: "sigma", Format: "%.4g"},
			{Name: "min tr F", Key: "min_trace", Format: "%.4g"},
			{Name: "mean tr F", Key: "mean_trace", Format: "%.4g"},
			{Name: "max tr F", Key: "max_trace", Format: "%.4g"},
			{Name: "d/σ²", Key: "d_over_sigma2", Format: "%.4g"},
			{Name: "grid fraction with tr F < 0", Key: "negative_fraction", Format: "%.3f"},
		},
		Notes: []string{"tr F ≤ d/σ² everywhere (Prop. 1: F ≼ I/σ²); tr F < 0 between modes, where −log q_t is not convex."}}
	for _, s := range r.Summaries() {
		t.Add(report.Float(s.T), report.Float(s.Sigma), report.Float(s.MinTrace), report.Float(s.MeanTrace), report.Float(s.MaxTrace),
			report.Float(s.IsotropicBound), report.Float(s.NegativeFraction))
	}
	traceCaption := "σ² tr F / d of the exact Fisher over the plane at each time, data points as crosses (symmetric-log colour scale covering the data)"
	return &report.Report{Name: "fields", Title: "Quick start: exact Fisher-trace and score fields of an 8-point ring",
		Tables: []*report.Table{t},
		Figures: []*report.Figure{
			{Name: "trace.png", Caption: traceCaption, Render: r.traceFigure},
			{Name: "trace.svg", Caption: traceCaption + ", as SVG", Render: r.traceFigure},
			{Name: "score.png", Render: r.scoreFigure,
				Caption: "log q(x, t) (colour, 12 nats below the maximum; lower values marked) and the exact score field (arrows)"},
		}}, nil
}

func rows(m *mat.Dense) int { r, _ := m.Dims(); return r }
