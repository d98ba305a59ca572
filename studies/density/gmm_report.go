package density

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
)

// Report implements report.Result: density.md / density.csv (every method
// and target), the quantile routes, and two figures: achieved against
// target level, and the level miss against the cost per sample.
func (r *GMMResult) Report() (*report.Report, error) {
	c := r.Config
	title := fmt.Sprintf("# Density guidance on analytic Gaussian mixtures (%s, d = %v, K = %d)\n\n", r.Schedule, c.Dims, c.Components) +
		"Density guidance (dfx/pfode DensityGuide) moves each PF-ODE sample along u = v + λ s/‖s‖², which changes d/dt log q_t(x_t) by λ; " +
		fmt.Sprintf("a Level target holds ℓ on a quantile curve of log q_t under q_t (gain %v), an offset adds P nats per unit time. ", c.Gain) +
		fmt.Sprintf("Data: the adjoint study's mixture (%d anisotropic Gaussians). ", c.Components) +
		fmt.Sprintf("%d samples from the same prior noises per row, RK4 with %d steps from t = 1 to %g. ", c.Samples, c.Steps, c.TMin) +
		"Achieved: the mixture's exact log q at the end point (mean ± SE over samples); miss = achieved − level. " +
		"'exact' steers with the mixture's own score and trace from ℓ = exact log q_1; the network rows steer an ε-network " +
		fmt.Sprintf("(residual MLP %d × %d, v-prediction, %d steps on %d draws; t_θ and ν_θ likewise) ", c.Width, c.Depth, c.TrainSteps, c.TrainSamples) +
		"with each trace estimator, from ℓ = the prior's log N(x; 0, σ_1² I). " +
		"An offset steers with λ = −P, a level with λ = level′ + gain·(ℓ − level) − r, r = −f d − ½g² tr F " +
		"(figures/density/NOTES.md reads the columns)."
	main := &report.Table{Name: "density", Title: title,
		Caption: "density guidance on analytic Gaussian mixtures: achieved log-density against quantile and offset targets, exact and learned traces, " +
			"cost per sample",
		Columns: []report.Column{{Name: "d"}, {Name: "method"}, {Name: "target"}, {Name: "level", Format: "%.3f", Blank: "–"},
			{Name: "achieved log q", Key: "achieved", Format: "%.3f"}, {Name: "miss", Format: "%.3f", Blank: "–"},
			{Name: "|miss|", Key: "abs_miss", Format: "%.3f", Blank: "–"},
			{Name: "|ℓ − log q|", Key: "tracked", Format: "%.3g"}, {Name: "at a mode", Key: "at_mode"}, {Name: "λ limited", Key: "limited", Format: "%.3f"},
			{Name: "time / sample", Key: "per_sample", Unit: "s"}, {Name: "NFE"}}}
	for _, w := range r.Rows {
		lvl, miss, abs := report.Float(w.Level), report.FloatSE(w.Miss.Mean, w.Miss.SE), report.FloatSE(w.AbsMiss.Mean, w.AbsMiss.SE)
		if math.IsNaN(w.Level) {
			lvl, miss, abs = report.None(), report.None(), report.None()
		}
		main.Add(report.Int(w.Dim), report.Text(w.Method), report.Text(w.Target), lvl, report.FloatSE(w.Achieved.Mean, w.Achieved.SE), miss, abs,
			report.FloatSE(w.Tracked.Mean, w.Tracked.SE), report.Int(w.AtMode), report.Float(w.Limited), report.Duration(w.PerSample), report.Int(w.NFE))
	}
	main.Notes = []string{"'at a mode': samples that end below their level with ‖s‖² < tr F/10 (a typical point has ‖s‖² ≈ tr F). " +
		"'λ limited': the fraction of guided evaluations whose λ the speed bound (DefaultCap) more than halved."}
	routes := &report.Table{Name: "density-quantiles",
		Title: "## Where the levels come from\n\nThe levels above are quantiles of log q_t(X_t), X_t ~ q_t: " + r.quantileHow() +
			" Without exact samples (a network), the same quantiles come from an unguided batch carried along the PF-ODE with ℓ started at the prior's " +
			"log-density and the method's trace: the PF-ODE carries q_1 to q_t, so its ℓ values are draws of log q_t(X_t). " +
			fmt.Sprintf("The table compares the two routes at t = %v (the unguided rows' %d samples).", c.TMin, c.Samples),
		Caption: "quantiles of log q_t at t_min: exact draws vs each method's unguided batch",
		Columns: []report.Column{{Name: "d"}, {Name: "route"}}}
	for _, p := range c.Quantiles {
		routes.Columns = append(routes.Columns, report.Column{Name: fmt.Sprintf("q=%g", p), Key: fmt.Sprintf("q%g", p), Format: "%.3f"})
	}
	for _, d := range c.Dims {
		q := r.Quantiles[d]
		row := []report.Cell{report.Int(d), report.Text("exact draws of q_t")}
		for _, v := range q.Values[len(q.Values)-1] {
			row = append(row, report.Float(v))
		}
		routes.Add(row...)
		for _, m := range r.methods(d) {
			row := []report.Cell{report.Int(d), report.Text("unguided batch, " + m)}
			for _, v := range r.RefQuantiles[d][m] {
				row = append(row, report.Float(v))
			}
			routes.Add(row...)
		}
	}
	main.More = []*report.Table{routes}
	return &report.Report{Name: "density", Title: "Density guidance on analytic Gaussian mixtures",
		Tables: []*report.Table{main},
		Figures: []*report.Figure{
			{Name: "density-levels.png", Caption: "achieved exact log q at t_min against the quantile level asked, per method (mean ± 1 SE)", Render: r.levelsFigure},
			{Name: "density-cost.png", Caption: "mean |miss| of the quantile levels against the time per sample, per method", Render: r.costFigure},
		}}, nil
}

func (r *GMMResult) quantileHow() string {
	for _, q := range r.Quantiles {
		return q.How + "."
	}
	return ""
}

// methods lists the methods of dimension d in row order.
func (r *GMMResult) methods(d int) []string {
	var out []string
	for _, w := range r.Rows {
		if w.Dim == d && (len(out) == 0 || out[len(out)-1] != w.Method) {
			out = append(out, w.Method)
		}
	}
	return out
}

// levelRows are the quantile-target rows of method m in dimension d,
// guided to t_min (the "until" rows stop early and are left out).
func (r *GMMResult) levelRows(d int, m string) []GMMRow {
	var out []GMMRow
	for _, w := range r.Rows {
		if w.Dim == d && w.Method == m && strings.HasPrefix(w.Target, "q=") && !strings.Contains(w.Target, "until") {
			out = append(out, w)
		}
	}
	return out
}

// levelsFigure has one panel per dimension, stacked, each wide enough for
// its legend beside the plot; a panel's y axis spans its levels with a
// margin of a quarter of their range, and a method's points that fall
// outside are counted in the legend (k of n off scale), not drawn, so that
// one diverging trace (DF-TM at small t) does not flatten the rest.
func (r *GMMResult) levelsFigure(format string) ([]byte, error) {
	var plots []*plot.Plot
	for _, d := range r.Config.Dims {
		lo, hi := math.Inf(1), math.Inf(-1)
		diag := plotx.Series{Name: "achieved = level"}
		for _, w := range r.levelRows(d, MethodExact) {
			lo, hi = math.Min(lo, w.Level), math.Max(hi, w.Level)
			diag.X, diag.Y = append(diag.X, w.Level), append(diag.Y, w.Level)
		}
		margin := math.Max(0.25*(hi-lo), 0.5)
		ylo, yhi := lo-margin, hi+margin
		var ss, notes []plotx.Series
		for _, m := range r.methods(d) {
			s := plotx.Series{Name: m, Bars: true}
			off, nOff, rows := math.Inf(1), 0, r.levelRows(d, m)
			for _, w := range rows {
				if a := w.Achieved.Mean; !(a >= ylo && a <= yhi) {
					off, nOff = math.Min(off, a), nOff+1
					continue
				}
				s.X, s.Y = append(s.X, w.Level), append(s.Y, w.Achieved.Mean)
				s.Lo, s.Hi = append(s.Lo, w.Achieved.Mean-w.Achieved.SE), append(s.Hi, w.Achieved.Mean+w.Achieved.SE)
			}
			if len(s.X) > 0 {
				ss = append(ss, s)
			}
			if !math.IsInf(off, 1) {
				notes = append(notes, plotx.OffScale(m, nOff, len(rows), fmt.Sprintf("down to %.3g", off)))
			}
		}
		ss = plotx.Distinct(append([]plotx.Series{diag}, ss...))
		ss = append(append(ss, notes...), plotx.Series{Name: fmt.Sprintf("bars: ± 1 SE over %d samples", r.Config.Samples), Note: true})
		p, err := plotx.Lines(fmt.Sprintf("density guidance to quantiles of log q_t (d = %d)", d),
			fmt.Sprintf("level asked: quantile of log q_t at t = %g", r.Config.TMin),
			"achieved exact log q (mean)", ss...)
		if err != nil {
			return nil, err
		}
		p.Y.Min, p.Y.Max = ylo, yhi
		plots = append(plots, p)
	}
	return plotx.TilesBytes(plots, 1, 10*vg.Inch, 4*vg.Inch, format)
}

// costFigure has one panel per dimension, stacked: each method's mean
// |miss| over the levels against its time per guided sample, log–log.
func (r *GMMResult) costFigure(format string) ([]byte, error) {
	var plots []*plot.Plot
	for _, d := range r.Config.Dims {
		var ss []plotx.Series
		for _, m := range r.methods(d) {
			rows := r.levelRows(d, m)
			if len(rows) == 0 {
				continue
			}
			miss, cost := 0.0, 0.0
			for _, w := range rows {
				miss += w.AbsMiss.Mean / float64(len(rows))
				cost += w.PerSample.Seconds() / float64(len(rows))
			}
			ss = append(ss, plotx.Series{Name: m, X: []float64{cost}, Y: []float64{miss}, Points: true})
		}
		ss = plotx.Distinct(ss)
		p, err := plotx.LogLines(fmt.Sprintf("accuracy and cost of the trace (d = %d; |miss| averaged over the quantile levels)", d), "time per guided sample [s]",
			"|achieved − level| [nats]", true, true, ss...)
		if err != nil {
			return nil, err
		}
		plotx.Room(p)
		plots = append(plots, p)
	}
	return plotx.TilesBytes(plots, 1, 10*vg.Inch, 4*vg.Inch, format)
}
