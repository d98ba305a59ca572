package access

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// AccessPlaneFull is the 2-D profile of the access comparison: the estimators'
// error versus t on an 8-point mixture in the plane, where every method can
// be checked at a glance.
func AccessPlaneFull() AccessConfig {
	return AccessConfig{Name: "plane", Schedule: "vp", Dim: 2, Points: 8, Times: []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
		Queries: 64, Steps: 3000, Width: 128, Depth: 3, HutchK: 4, HutchPPM: 6, EMA: true, Seed: 1}
}

// AccessPlaneQuick is AccessPlaneFull with short training, for notebooks in CI.
func AccessPlaneQuick() AccessConfig {
	c := AccessPlaneFull()
	c.Times = []float64{0.1, 0.3, 0.5, 0.7, 0.9}
	c.Queries, c.Steps, c.Width, c.Depth, c.EMA = 16, 400, 64, 2, false
	return c
}

// ErrorPlots draws the mean relative error (a ratio, as in the table) of
// each method versus t, one panel for traces and one for matrix-vector
// products, on a log scale. The exact closed form's error is round-off
// (≈ 1e-16): it is not drawn, and the legend says how small it is.
func (r *AccessResult) ErrorPlots() ([]*plot.Plot, error) {
	var out []*plot.Plot
	for _, kind := range []string{"trace", "matvec"} {
		byMethod := map[string]*plotx.Series{}
		exactMax := -1.0
		for _, w := range r.Rows {
			if w.Kind != kind {
				continue
			}
			if w.Method == "exact" {
				exactMax = max(exactMax, w.RelErr)
				continue
			}
			s := byMethod[w.Method]
			if s == nil {
				s = &plotx.Series{Name: w.Method, Points: true}
				byMethod[w.Method] = s
			}
			s.X = append(s.X, w.T)
			s.Y = append(s.Y, w.RelErr)
		}
		var names []string
		for n := range byMethod {
			names = append(names, n)
		}
		sort.Strings(names)
		var series []plotx.Series
		for _, n := range names {
			series = append(series, *byMethod[n])
		}
		series = append(series, markCoinciding(series)...)
		if exactMax >= 0 {
			series = append(series, plotx.Series{Name: fmt.Sprintf("exact: %.0e (not drawn)", exactMax), Note: true})
		}
		title := fmt.Sprintf("%s: relative error vs exact (d = %d, %s)", map[string]string{"trace": "tr F", "matvec": "F v"}[kind], r.Config.Dim, r.Config.Schedule)
		p, err := plotx.LogLines(title, "t", "mean rel. error (ratio)", false, true, series...)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// markCoinciding appends to the name of each series that lies within 2 %
// of an earlier one at every t the name of that one, and returns a legend
// note saying that such curves coincide: one is drawn on top of the other,
// and the reader would otherwise look for the hidden curve.
func markCoinciding(series []plotx.Series) (note []plotx.Series) {
	for j := range series {
		for i := 0; i < j; i++ {
			a, b := series[i], series[j]
			if len(a.Y) != len(b.Y) {
				continue
			}
			same := true
			for k := range a.Y {
				if a.X[k] != b.X[k] || math.Abs(a.Y[k]-b.Y[k]) > 0.02*math.Abs(a.Y[k]) {
					same = false
				}
			}
			if same {
				series[j].Name += " ≈ " + a.Name
				note = []plotx.Series{{Name: "(≈: curves coincide", Note: true}, {Name: " within 2 % at every t)", Note: true}}
				break
			}
		}
	}
	return note
}

// ErrorPNG is ErrorPlots side by side, for notebooks.
func (r *AccessResult) ErrorPNG() ([]byte, error) { return r.errorFigure("png") }

func (r *AccessResult) errorFigure(format string) ([]byte, error) {
	ps, err := r.ErrorPlots()
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes(ps, len(ps), 5.5*vg.Inch, 4.2*vg.Inch, format)
}

// Report holds the comparison's tables (Config.Name.md/.csv) and its
// figure (Config.Name_errors.png).
func (r *AccessResult) Report() (*report.Report, error) {
	c := r.Config
	return &report.Report{Name: "access", Title: fmt.Sprintf("Fisher access methods vs the exact Fisher, d = %d", c.Dim),
		Tables: r.Tables(),
		Figures: []*report.Figure{{Name: c.name() + "_errors.png", Render: r.errorFigure,
			Caption: fmt.Sprintf("relative error (ratio) of each trace estimator and F v method versus t, d = %d, log scale", c.Dim)}},
	}, nil
}

// AccessRuns is what `dfx reproduce access` computes: the comparison in
// d = 64 and in the plane.
type AccessRuns struct{ Runs []*AccessResult }

// AccessAllConfig is the comparisons `dfx reproduce access` runs, in order.
type AccessAllConfig struct{ Runs []AccessConfig }

// AccessAllFull is AccessFull and AccessPlaneFull; AccessAllQuick is
// AccessQuick and AccessPlaneQuick.
func AccessAllFull() AccessAllConfig {
	return AccessAllConfig{Runs: []AccessConfig{AccessFull(), AccessPlaneFull()}}
}

func AccessAllQuick() AccessAllConfig {
	return AccessAllConfig{Runs: []AccessConfig{AccessQuick(), AccessPlaneQuick()}}
}

// RunAccessAll runs every comparison of c, logging each method's error.
func RunAccessAll(ctx context.Context, c AccessAllConfig, log io.Writer) (*AccessRuns, error) {
	out := &AccessRuns{}
	for _, cfg := range c.Runs {
		start := time.Now()
		r, err := RunAccess(ctx, cfg)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		for _, w := range r.Rows {
			fmt.Fprintf(&buf, "  d=%-3d t=%-4g %-6s %-13s rel. error %-9.3g %v/query\n", cfg.Dim, w.T, w.Kind, w.Method, w.RelErr, w.PerQuery.Round(time.Microsecond))
		}
		fmt.Fprintf(&buf, "  (%s: %.0fs)\n", cfg.name(), time.Since(start).Seconds())
		if log != nil {
			if _, err := log.Write(buf.Bytes()); err != nil {
				return nil, err
			}
		}
		out.Runs = append(out.Runs, r)
	}
	return out, nil
}

// Report merges the runs' reports into one folder, "access".
func (a *AccessRuns) Report() (*report.Report, error) {
	var rs []*report.Report
	for _, r := range a.Runs {
		rep, err := r.Report()
		if err != nil {
			return nil, err
		}
		rs = append(rs, rep)
	}
	return report.Merge("access", "Fisher access methods vs the exact Fisher", rs...), nil
}
