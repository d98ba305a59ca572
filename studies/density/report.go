package density

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// Report implements report.Result: mnist-density.md/.csv (every model,
// trace and target), the sample grids across targets, and the achieved
// bpd against the level asked.
func (r *Result) Report() (*report.Report, error) {
	if r.Shard != "" {
		return r.shardReport(), nil
	}
	rep := &report.Report{Name: "mnist-density", Title: "Density guidance on MNIST", Tables: []*report.Table{r.rowsTable(), r.costTable()},
		Figures: []*report.Figure{{Name: "levels.png", Caption: "achieved bpd (measured) against the level asked, per model and trace (mean ± 1 SE)",
			Render: r.levelsFigure}}}
	for _, k := range r.gridKeys() {
		name := strings.ReplaceAll(strings.ReplaceAll(k.model+"-"+k.trace, ":", ""), " ", "")
		rep.Figures = append(rep.Figures, &report.Figure{Name: fmt.Sprintf("samples-%s.png", name),
			Caption: fmt.Sprintf("samples across density targets: %s, %s trace (rows: targets, labelled with the mean achieved bpd; the same noises in every row)",
				k.model, k.trace),
			Render: func(format string) ([]byte, error) { return r.samplesFigure(k, format) }})
	}
	return rep, nil
}

// shardReport is a shard's partial report: the rows in the work folder so
// far, no figures, no cost table.
func (r *Result) shardReport() *report.Report {
	c, t := r.Config, r.rowsTable()
	all := len(c.targets().list(r.Levels["mixture"], true))
	for _, tr := range c.Traces {
		all += len(c.targets().list(r.Levels["network"], slices.Contains(c.UntilTraces, tr)))
	}
	t.Title = fmt.Sprintf("# Density guidance on MNIST (%s profile): partial, shard %s\n\n", c.Profile, r.Shard) +
		fmt.Sprintf("This shard holds %d of the %d rows (its own and those it read from the work folder); ", len(r.Rows), all) +
		"the run without a shard writes the whole report with its figures and cost table.\n\n" +
		strings.SplitN(t.Title, "\n\n", 3)[2]
	return &report.Report{Name: "mnist-density", Title: "Density guidance on MNIST (partial: shard " + r.Shard + ")", Tables: []*report.Table{t}}
}

// rowsTable is every model, trace and target.
func (r *Result) rowsTable() *report.Table {
	c := r.Config
	title := fmt.Sprintf("# Density guidance on MNIST (%s profile)\n\n", c.Profile) +
		fmt.Sprintf("Computed on %s: %.0f s of computing for its rows, summed over the runs that made them%s.\n\n",
			r.Machine, r.RowTime.Seconds(), costTimeAbout(r.CostTime)) +
		fmt.Sprintf("Unconditional PF-ODE samples (RK4, %d steps from t = 1 to t_min, %d samples per row from the same noises) ", c.Steps, c.Samples) +
		"steered by density guidance (dfx/pfode DensityGuide: u = v + λ s/‖s‖², d/dt log q_t(x_t) = −div v + λ) " +
		fmt.Sprintf("to a quantile level of log q_t (gain %v) or by an offset in nats per unit time. ", c.Gain) +
		fmt.Sprintf("**Mixture**: the Gaussian mixture fitted to the dequantised training images (%d per digit, rank %d; exact test bpd %.4f on 1 000 images), ",
			c.Mixture.Components, c.Mixture.Rank, r.MixtureBPD) +
		"an image-scale model whose log q_t and Fisher trace are exact: guided with its exact trace, levels from exact draws of q_t, bpd in closed form. " +
		fmt.Sprintf("**Network** (%s): steered and tracked with each trace; its levels come from the reference route (%s); ",
			r.NetworkAbout, r.Levels["network"].How) +
		fmt.Sprintf("the achieved bpd is measured independently by dopri5 (rtol %g; the solver error column is the largest change against rtol %g) ",
			c.MeasureRTol, 10*c.MeasureRTol) +
		fmt.Sprintf("with the trace %s, from t_min%s. ", measureAbout(r.Measure), fallbackAbout(r.Fallbacks)) +
		fmt.Sprintf("bpd = −log q_{t_min}(x)/(%d ln 2) + %g of the sample (a continuous point, so no dequantisation). ",
			r.dim(), math.Log2(float64(r.levels()))-1) +
		"'tracked' is the bpd the guide's own ℓ says (figures/mnist-density/NOTES.md reads its distance to 'achieved'). " +
		"Ink: mean intensity in [0, 1]; frame: rms of the 2-pixel border; detail: mean |difference| of neighbouring pixels."
	t := &report.Table{Name: "mnist-density", Title: title,
		Caption: "density guidance on MNIST: achieved bpd against quantile and offset targets, per trace estimator, " +
			"with ink, border and detail of the images and the cost per sample",
		Columns: []report.Column{{Name: "model"}, {Name: "trace"}, {Name: "target"}, {Name: "level [bpd]", Key: "level_bpd", Format: "%.5g", Blank: "–"},
			{Name: "achieved [bpd]", Key: "achieved_bpd", Format: "%.5g", SEFormat: "%.2g"},
			{Name: "tracked [bpd]", Key: "tracked_bpd", Format: "%.5g", SEFormat: "%.2g"},
			{Name: "|miss| [bpd]", Key: "abs_miss_bpd", Format: "%.3g", SEFormat: "%.2g", Blank: "–"},
			{Name: "solver error [bpd]", Key: "solver_err_bpd", Format: "%.1e"},
			{Name: "ink", Format: "%.3f"}, {Name: "frame rms", Key: "frame_rms", Format: "%.3f"}, {Name: "detail", Format: "%.4f"},
			{Name: "λ limited", Key: "limited", Format: "%.3f"},
			{Name: "time / sample, as run", Key: "per_sample", Unit: "s"}, {Name: "NFE"}}}
	for _, w := range r.Rows {
		lvl, miss := report.Float(w.Level), report.FloatSE(w.AbsMiss.Mean, w.AbsMiss.SE)
		if math.IsNaN(w.Level) {
			lvl, miss = report.None(), report.None()
		}
		t.Add(report.Text(w.Model), report.Text(w.Trace), report.Text(w.Target), lvl, report.FloatSE(w.Achieved.Mean, w.Achieved.SE),
			report.FloatSE(w.Tracked.Mean, w.Tracked.SE), miss, report.Float(w.SolverErr), report.Float(w.Ink), report.Float(w.Frame), report.Float(w.Detail),
			report.Float(w.Limited), report.Duration(w.PerSample), report.Int(w.NFE))
	}
	return t
}

// dim and levels are the problem's dimension and pixel levels (MNIST's
// when the result was not made by a run).
func (r *Result) dim() int {
	if r.p == nil {
		return mnist.Dim
	}
	return r.p.Dim
}

func (r *Result) levels() int {
	if r.p == nil || r.p.Image.Levels == 0 {
		return 256
	}
	return r.p.Image.Levels
}

// costTable is the accuracy and the interleaved cost of each trace.
func (r *Result) costTable() *report.Table {
	c := r.Config
	title := "## Accuracy and cost of density-guided sampling\n\n" +
		"Accuracy from the rows above: 'tracking error' is the mean over the unguided and offset rows of |achieved − tracked| (row means, bpd), " +
		"'level |miss|' the mean over the quantile rows guided to t_min of the per-sample |miss|. " +
		fmt.Sprintf("Cost measured on %s, apart from the rows above (whose 'as run' times depend on the machine and its load): ", r.CostMachine) +
		fmt.Sprintf("%d RK4 steps of a batch of %d from the same noises, ℓ tracked with each trace (a guided step evaluates the same score and trace), ",
			c.CostSteps, c.Samples) +
		fmt.Sprintf("median of %d interleaved rounds after a warm-up run of each; per sample = per step × %d steps / %d samples. ",
			c.CostRounds, c.Steps, c.Samples) +
		"The measurement of the achieved bpd is not included."
	cost := &report.Table{Name: "mnist-density-cost", Title: title,
		Caption: "accuracy (tracking error, level |miss|) and cost of density-guided sampling per trace estimator, timed in interleaved rounds",
		Columns: []report.Column{{Name: "model"}, {Name: "trace"}, {Name: "tracking error [bpd]", Key: "tracking_err_bpd", Format: "%.3g", Blank: "–"},
			{Name: "level |miss| [bpd]", Key: "level_miss_bpd", Format: "%.3g", Blank: "–"},
			{Name: "per RK4 step (batch)", Key: "per_step", Unit: "s"}, {Name: "per sample", Key: "per_sample", Unit: "s"},
			{Name: "× df-tm-c", Key: "vs_dftmc", Format: "%.3g", Blank: "–"}, {Name: "rounds"}}}
	var ref time.Duration
	for _, k := range r.Costs {
		if k.Model == "network" && k.Trace == "df-tm-c" {
			ref = k.PerStep
		}
	}
	for _, k := range r.Costs {
		rel := report.None()
		if ref > 0 {
			rel = report.Float(float64(k.PerStep) / float64(ref))
		}
		track, miss := r.accuracy(k.Model, k.Trace)
		cost.Add(report.Text(k.Model), report.Text(k.Trace), orNone(track), orNone(miss), report.Duration(k.PerStep), report.Duration(k.PerSample), rel,
			report.Int(k.Rounds))
	}
	return cost
}

type gridKey struct{ model, trace string }

// gridKeys are the (model, trace) pairs drawn as sample grids: the mixture
// and the network with each of GridTraces.
func (r *Result) gridKeys() []gridKey {
	out := []gridKey{{"mixture", "exact"}}
	for _, tr := range r.Config.GridTraces {
		out = append(out, gridKey{"network", tr})
	}
	return out
}

func (r *Result) samplesFigure(k gridKey, format string) ([]byte, error) {
	var rows [][]*mat.Dense
	var labels []string
	for _, w := range r.Rows {
		if w.Model != k.model || w.Trace != k.trace || strings.Contains(w.Target, "until") {
			continue
		}
		rows = append(rows, w.Grid)
		labels = append(labels, fmt.Sprintf("%s: %.4g bpd", w.Target, w.Achieved.Mean))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("density: no samples of %s/%s", k.model, k.trace)
	}
	p, err := mnist.ImageGrid(fmt.Sprintf("density guidance, %s (%s trace)", k.model, k.trace), "sample (same noise in every row)", "target", rows, nil)
	if err != nil {
		return nil, err
	}
	mnist.LabelRows(p, labels)
	return plotx.Bytes(p, vg.Length(len(rows[0]))*0.6*vg.Inch+2.6*vg.Inch, vg.Length(len(rows))*0.6*vg.Inch+1.1*vg.Inch, format)
}

// levelsFigure has one panel per model (the mixture's and the network's
// levels lie bpd apart). A panel's y axis spans its levels with a margin:
// a method whose points fall outside is not drawn there but named in the
// legend with its range ("off scale"), so one exploding trace does not
// flatten the others.
func (r *Result) levelsFigure(format string) ([]byte, error) {
	var plots []*plot.Plot
	for _, model := range []string{"mixture", "network"} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range r.Rows {
			if v.Model == model && !math.IsNaN(v.Level) {
				lo, hi = math.Min(lo, v.Level), math.Max(hi, v.Level)
			}
		}
		if math.IsInf(lo, 0) {
			continue
		}
		ylo, yhi := lo-0.5, hi+1.5
		diag := plotx.Series{Name: "achieved = level"}
		var ss, notes []plotx.Series
		seen := map[string]bool{}
		for _, w := range r.Rows {
			if w.Model != model || seen[w.Trace] || math.IsNaN(w.Level) {
				continue
			}
			seen[w.Trace] = true
			s := plotx.Series{Name: w.Trace, Bars: true}
			off, nOff, total := math.Inf(1), 0, 0
			for _, v := range r.Rows {
				if v.Model != model || v.Trace != w.Trace || math.IsNaN(v.Level) || strings.Contains(v.Target, "until") {
					continue
				}
				total++
				if a := v.Achieved.Mean; !(a >= ylo && a <= yhi) {
					off, nOff = math.Min(off, a), nOff+1
					continue
				}
				s.X, s.Y = append(s.X, v.Level), append(s.Y, v.Achieved.Mean)
				s.Lo, s.Hi = append(s.Lo, v.Achieved.Mean-v.Achieved.SE), append(s.Hi, v.Achieved.Mean+v.Achieved.SE)
				diag.X, diag.Y = append(diag.X, v.Level), append(diag.Y, v.Level)
			}
			if len(s.X) > 0 {
				ss = append(ss, s)
			}
			if !math.IsInf(off, 1) {
				notes = append(notes, plotx.OffScale(w.Trace, nOff, total, fmt.Sprintf("achieved ≥ %.3g bpd", off)))
			}
		}
		sort.Slice(diag.X, func(i, j int) bool { return diag.X[i] < diag.X[j] })
		sort.Float64s(diag.Y)
		notes = append(notes, plotx.Coincident(ss, 0.01*(yhi-ylo))...) // one curve would hide the others
		ss = plotx.Distinct(append([]plotx.Series{diag}, ss...))
		ss = append(append(ss, notes...), plotx.Series{Name: fmt.Sprintf("bars: ± 1 SE over %d samples", r.Config.Samples), Note: true})
		p, err := plotx.Lines(fmt.Sprintf("%s: achieved against asked", model), "level asked [bpd at t_min]", "achieved [bpd, measured]", ss...)
		if err != nil {
			return nil, err
		}
		p.Y.Min, p.Y.Max = ylo, yhi
		plots = append(plots, p)
	}
	if len(plots) == 0 {
		return nil, fmt.Errorf("density: no quantile targets to draw")
	}
	return plotx.TilesBytes(plots, 1, 11*vg.Inch, 4*vg.Inch, format) // one above the other, wide: the legends are long
}

// accuracy is a model and trace's mean |achieved − tracked| over its
// unguided and offset rows and its mean per-sample |miss| over its quantile
// rows guided to t_min (NaN where it has no such rows).
func (r *Result) accuracy(model, trace string) (track, miss float64) {
	var ts, ms []float64
	for _, w := range r.Rows {
		switch {
		case w.Model != model || w.Trace != trace || strings.Contains(w.Target, "until"):
		case math.IsNaN(w.Level):
			ts = append(ts, math.Abs(w.Achieved.Mean-w.Tracked.Mean))
		default:
			ms = append(ms, w.AbsMiss.Mean)
		}
	}
	track, miss = math.NaN(), math.NaN()
	if len(ts) > 0 {
		track = stat.Mean(ts, nil)
	}
	if len(ms) > 0 {
		miss = stat.Mean(ms, nil)
	}
	return track, miss
}

// orNone is v, or a blank cell when v is NaN.
func orNone(v float64) report.Cell {
	if math.IsNaN(v) {
		return report.None()
	}
	return report.Float(v)
}

// costTimeAbout says how long the cost table took (nothing when none was
// timed).
func costTimeAbout(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("; the cost table took %.0f s more, in the run that wrote this report", d.Seconds())
}

// measureAbout says what the measurement's trace is.
func measureAbout(name string) string {
	if s, err := access.ParseTrace(name); err == nil && s.Family == models.SkipHutchinson.Name {
		return fmt.Sprintf("%s (the skip mixture's exact trace plus Hutchinson-%d on the residual)", name, s.K)
	}
	return name
}

// fallbackAbout says which skip-hutchinson traces ran as hutchinson.
func fallbackAbout(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the ε-network has no mixture skip: %s ran as plain Hutchinson)", strings.Join(names, ", "))
}
