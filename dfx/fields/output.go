package fields

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

const panel = 3.2 * vg.Inch

// TracePlots draws the normalised trace σ² tr F(x, t)/d for each time, with
// the data points on top. It is 1 for an isotropic Gaussian of variance σ²,
// ≤ 1 everywhere (F ≼ I/σ²), and negative between modes; the colour scale is
// clipped below at −2 so that every time shares one scale.
func (r *Result) TracePlots() ([]*plot.Plot, error) {
	var ps []*plot.Plot
	for _, f := range r.Fields {
		z := make([][]float64, len(f.Trace))
		for i, row := range f.Trace {
			z[i] = make([]float64, len(row))
			for j, v := range row {
				z[i][j] = v * f.Sigma * f.Sigma / 2
			}
		}
		p, err := plotx.HeatMap(fmt.Sprintf("σ² tr F / d, t=%g (σ=%.3g)", f.T, f.Sigma), r.Xs, r.Ys, z,
			plotx.HeatOptions{XLabel: "x₁", YLabel: "x₂", Min: -2, Max: 1})
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

// ScorePlots draws log q_t as a heat map with the score field as arrows.
func (r *Result) ScorePlots() ([]*plot.Plot, error) {
	var ps []*plot.Plot
	for _, f := range r.Fields {
		p, err := plotx.HeatMap(fmt.Sprintf("log q_t (colour) and score (arrows), t=%g", f.T), r.Xs, r.Ys, f.LogP,
			plotx.HeatOptions{XLabel: "x₁", YLabel: "x₂", Min: maxLogP(f.LogP) - 12, Max: maxLogP(f.LogP)})
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

func (r *Result) addData(p *plot.Plot) error {
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
func (r *Result) TracePNG() ([]byte, error) {
	ps, err := r.TracePlots()
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes(ps, len(ps), panel, panel, "png")
}

// ScorePNG is the score panels side by side, for notebooks.
func (r *Result) ScorePNG() ([]byte, error) {
	ps, err := r.ScorePlots()
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes(ps, len(ps), panel, panel, "png")
}

// Summary is one row of the table: statistics of the trace field at time T.
type Summary struct {
	T, Sigma, MinTrace, MaxTrace, MeanTrace, NegativeFraction, IsotropicBound float64
}

// Summaries lists, per time, the range of tr F over the grid, the fraction of
// the grid where tr F < 0 (−log q_t is not convex there), and the bound d/σ².
func (r *Result) Summaries() []Summary {
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

// WriteTo writes trace.png/.svg, score.png, summary.md/.csv and data.csv
// into dir, each atomically.
func (r *Result) WriteTo(dir string) error {
	tp, err := r.TracePlots()
	if err != nil {
		return err
	}
	sp, err := r.ScorePlots()
	if err != nil {
		return err
	}
	for _, fmtName := range []string{"png", "svg"} {
		if err := plotx.SaveTiles(tp, len(tp), panel, panel, fmtName, filepath.Join(dir, "trace."+fmtName)); err != nil {
			return err
		}
	}
	if err := plotx.SaveTiles(sp, len(sp), panel, panel, "png", filepath.Join(dir, "score.png")); err != nil {
		return err
	}
	var md, csv strings.Builder
	fmt.Fprintf(&md, "# Exact Fisher trace of a %d-point 2-D Dirac mixture (%s schedule, %d×%d grid on [−%g, %g]²)\n\n",
		rows(r.Data), r.Schedule.Name(), r.Config.Grid, r.Config.Grid, r.Config.Extent, r.Config.Extent)
	md.WriteString("| t | σ(t) | min tr F | mean tr F | max tr F | d/σ² | grid fraction with tr F < 0 |\n|---|---|---|---|---|---|---|\n")
	csv.WriteString("t,sigma,min_trace,mean_trace,max_trace,d_over_sigma2,negative_fraction\n")
	for _, s := range r.Summaries() {
		fmt.Fprintf(&md, "| %g | %.4g | %.4g | %.4g | %.4g | %.4g | %.3f |\n", s.T, s.Sigma, s.MinTrace, s.MeanTrace, s.MaxTrace, s.IsotropicBound, s.NegativeFraction)
		fmt.Fprintf(&csv, "%g,%g,%g,%g,%g,%g,%g\n", s.T, s.Sigma, s.MinTrace, s.MeanTrace, s.MaxTrace, s.IsotropicBound, s.NegativeFraction)
	}
	md.WriteString("\ntr F ≤ d/σ² everywhere (Prop. 1: F ≼ I/σ²); tr F < 0 between modes, where −log q_t is not convex.\n")
	if err := atomicfile.WriteFile(filepath.Join(dir, "summary.md"), []byte(md.String())); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "summary.csv"), []byte(csv.String()))
}

func rows(m *mat.Dense) int { r, _ := m.Dims(); return r }

// Reproduce runs the experiment and writes its outputs into outDir.
func Reproduce(ctx context.Context, outDir string, quick bool, log io.Writer) error {
	cfg := Full()
	if quick {
		cfg = Quick()
	}
	r, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	if err := r.WriteTo(outDir); err != nil {
		return err
	}
	for _, s := range r.Summaries() {
		fmt.Fprintf(log, "  t=%-5g σ=%-7.3g tr F ∈ [%.4g, %.4g], negative on %.1f%% of the grid\n", s.T, s.Sigma, s.MinTrace, s.MaxTrace, 100*s.NegativeFraction)
	}
	return nil
}
