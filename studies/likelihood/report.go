package likelihood

import (
	"fmt"
	"math"
	"strings"

	"github.com/dfx-lab/dfx/dfx/report"
)

// Goals of the Table 1 analogue: the speed-ups the paper's Table 1 shows.
const (
	GoalDFTMSpeedup  = 500.0 // exact VJP trace / DF-TM, batch 1, CPU
	GoalDFEASpeedup  = 2.0   // VJP matvec / DF-EA standalone
	GoalDFEAMarginal = 0.05  // DF-EA's marginal cost / one forward
)

func f3(v float64) string { return fmt.Sprintf("%.3g", v) }
func pct(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}
func ms(v float64) string { return fmt.Sprintf("%.3g ms", 1000*v) }

// sectionTitle is a table's title: a section heading, then a paragraph that
// opens with where (machine, backend, profile, command) and goes on with the
// table's own setup.
func sectionTitle(heading, where, setup string) string {
	return "## " + heading + "\n\n" + where + " " + setup
}

// section is a named table that opens a section of the report (its title
// by sectionTitle), with its caption; the caller adds columns and rows.
func section(name, heading, where, setup, caption string) *report.Table {
	return &report.Table{Name: name, Title: sectionTitle(heading, where, setup), Caption: caption}
}

// thousands writes n with a space between groups of three digits ("60 000").
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// Report implements report.Result: seven tables and six figures, each
// table's reading in figures/<name>/NOTES.md.
func (r *Result) Report() (*report.Report, error) {
	c := r.Config
	rep := &report.Report{Name: c.Name, Title: c.Data + ": paper Table 1, Figures 1–2 and the exact empirical Fisher at image scale"}
	prof := "full profile"
	if c.Profile == report.Quick {
		prof = "quick profile (toy sizes; not the committed numbers)"
	}
	command := "dfx reproduce " + c.Name
	if c.Parts != nil { // some parts alone: the others' files are not this run's
		var parts []string
		for _, name := range Parts {
			if c.Parts[name] {
				parts = append(parts, name)
			}
		}
		command += " -parts " + strings.Join(parts, ",")
	}
	where := fmt.Sprintf("Measured on %s, GoMLX backend %q, %s; `%s` in %.0f s.", r.Machine, r.Backend, prof, command, r.Elapsed.Seconds())
	rep.Tables = append(rep.Tables, r.trainingTable(where))
	for _, t := range []struct {
		done  bool
		table func(string) *report.Table
	}{{r.Timing != nil, r.timingTable}, {r.Truth != nil, r.truthTable}, {r.BPD != nil, r.bpdTable},
		{r.Guidance != nil, r.guidanceTable}, {r.Fig2 != nil, r.fig2Table}, {r.Traj != nil, r.trajTable}} {
		if t.done {
			rep.Tables = append(rep.Tables, t.table(where))
		}
	}
	add := func(done bool, name, caption string, render func(string) ([]byte, error)) {
		if done {
			rep.Figures = append(rep.Figures, &report.Figure{Name: name, Caption: caption, Render: render})
		}
	}
	n := thousands(r.TrainImages)
	add(r.hasCurves(), "fig1a_loss.png", "Figure 1a analogue: training loss of the DF-TM network t_θ (and of ν_θ and the ε-network) against steps", r.lossFigure)
	add(r.Guidance != nil, "fig1b_nll_vs_logp.png", "Figure 1b analogue: mean NLL (bpd, DF-TM) against mean classifier log-probability of the "+
		"requested class over guidance scales, ± 1 standard error, both NLL protocols", r.guidanceFigure)
	add(r.Fig2 != nil, "fig2_ranked.png", "Figure 2 analogue: per class (rows), samples ordered by DF-TM NLL from lowest (left) to highest (right)",
		r.fig2Figure)
	add(r.Guidance != nil, "samples_by_scale.png", fmt.Sprintf("class-conditional samples (columns: requested class 0–%d) at each guidance "+
		"scale (rows), the same initial noise in every row", r.Classes-1), r.scaleGridFigure)
	add(r.Truth != nil, "truth_relerr.png", "relative error of each trace estimator against the exact Fisher of the "+n+
		"-image Dirac mixture versus t, training and test queries", r.truthFigure)
	add(r.Truth != nil, "truth_cov.png", "tr Cov[x₀|x_t]/d of the empirical mixture (exact) and as the networks imply it (t_θ − ‖ȳ_θ‖²/d), "+
		"training and test queries", r.covFigure)
	return rep, rep.Check()
}

func (r *Result) trainingTable(where string) *report.Table {
	t := &report.Table{Name: "training", Title: sectionTitle(r.Config.Data+" networks", where, "Each network is trained by `dfx train <name>` (fixed seed)."),
		Caption: "the " + r.Config.Data + " networks: steps, training time and machine, final loss, classifier accuracy",
		Columns: []report.Column{{Name: "network"}, {Name: "steps"}, {Name: "training time", Unit: "s", Format: "%.0f s"}, {Name: "machine"},
			{Name: "backend"}, {Name: "final loss", Format: "%.3g"}, report.Percent("test accuracy", "")}, Align: "lrrllrr"}
	for _, name := range []string{"eps", "dftm", "dftm-c", "classifier"} {
		rec := r.Records[name]
		if rec == nil {
			continue
		}
		acc := report.None()
		if name == "classifier" {
			acc = report.Float(rec.Accuracy)
		}
		final := math.NaN()
		if n := len(rec.Curve.Loss); n > 0 {
			final = rec.Curve.Loss[n-1]
		}
		t.Add(report.Text(name), report.Int(rec.Steps), report.Float(rec.Seconds), report.Text(rec.Machine), report.Text(rec.Backend), report.Float(final), acc)
	}
	return t
}

func (r *Result) timingTable(where string) *report.Table {
	tm := r.Timing
	t := section("table1", "Table 1 analogue: cost per call", where,
		fmt.Sprintf("Queries are noisy training images at t = %g; median of interleaved rounds after a warm-up call.", tm.T),
		"Table 1 analogue: time per call of every trace estimator and F·v operator at batch 1 and 64, with the ratios against the goals")
	t.Columns = []report.Column{{Name: "kind"}, {Name: "method"}, {Name: "batch"}, report.Millis("time per call", ""), {Name: "rounds"}, {Name: "what"}}
	t.Align = "llrrrl"
	for _, row := range tm.Rows {
		t.Add(report.Text(row.Kind), report.Text(row.Method), report.Int(row.Batch), report.Float(row.Seconds), report.Int(row.Rounds), report.Text(row.Note))
	}
	ratio := func(a, b string, batch int) float64 {
		ra, rb := tm.Get(a, batch), tm.Get(b, batch)
		if ra == nil || rb == nil || rb.Seconds == 0 {
			return math.NaN()
		}
		return ra.Seconds / rb.Seconds
	}
	for _, b := range r.Config.TimingBatches {
		if s := ratio("vjp-exact", "df-tm", b); !math.IsNaN(s) {
			note := fmt.Sprintf("Batch %d: exact VJP trace / DF-TM = %.0f× (goal ≥ %.0f× at batch 1)", b, s, GoalDFTMSpeedup)
			if c := ratio("vjp-exact", "df-tm-c", b); !math.IsNaN(c) {
				note += fmt.Sprintf("; / DF-TM-c = %.0f×", c)
			}
			t.Notes = append(t.Notes, note+".")
		}
		e, m := ratio("vjp-matvec", "df-ea", b), ratio("df-ea-marginal", "forward", b)
		t.Notes = append(t.Notes, fmt.Sprintf("Batch %d: VJP matvec / DF-EA standalone = %.2f× (goal ≥ %.0f×); "+
			"DF-EA's marginal cost inside a step = %.2f%% of one forward (goal ≤ %.0f%%).", b, e, GoalDFEASpeedup, 100*m, 100*GoalDFEAMarginal))
	}
	t.Notes = append(t.Notes, "The paper (Stable Diffusion, GPU): trace VJP 2195 s vs DF-TM 0.072 s; operator VJP 0.155 s vs DF-EA 0.063 s.")
	return t
}

func (r *Result) truthTable(where string) *report.Table {
	return r.Truth.table(sectionTitle("Ground truth at image scale: the exact Fisher of the "+thousands(r.TrainImages)+" training images", where, truthSetup),
		"every trace estimator, t_θ and ȳ_θ against the exact Fisher of the empirical "+r.Config.Data+" training distribution, by time and split")
}

// truthSetup says how the exact-Fisher table is made.
const truthSetup = "The empirical training distribution is a Dirac mixture whose diffused Fisher is exact (dfx/mixture, float64). " +
	"Queries x_t = α x₀ + σ ε with x₀ from the training set (atoms of the mixture) or the test set. " +
	"Relative errors are means over queries of |est − exact|/|exact|. " +
	"The bound is the corrected DF-TM bound (α²/σ⁴)(d δ₁ + δ₂(2‖ȳ‖ + δ₂)) (access.DFTMErrorBound)."

// table is the exact-Fisher table of tr under title (Markdown) with caption.
func (tr *TruthResult) table(title, caption string) *report.Table {
	g3 := func(name string) report.Column { return report.Column{Name: name, Format: "%.3g"} }
	h := []report.Column{{Name: "x₀ from"}, {Name: "t"}, g3("σ"), {Name: "queries"}, g3("exact tr F")}
	for _, e := range tr.Estimators {
		h = append(h, report.Percent(e+" rel. err", ""))
	}
	h = append(h, g3("δ₁ = |t_θ − t*|"), report.Percent("‖ȳ_θ − ȳ‖/‖ȳ‖", ""), report.Percent("bound holds", ""), g3("err/bound (median)"),
		g3("tr Cov/d exact"), g3("tr Cov/d network"), g3("top posterior weight"))
	t := &report.Table{Name: "truth", Title: title, Caption: caption, Columns: h}
	f := report.Float
	for _, row := range tr.Rows {
		cells := []report.Cell{report.Text(row.Split), f(row.T), f(row.Sigma), report.Int(row.Queries), f(row.ExactTrace)}
		for _, e := range tr.Estimators {
			cells = append(cells, f(row.RelErr[e]))
		}
		t.Add(append(cells, f(row.Delta1), f(row.Delta2Rel), f(row.BoundHolds), f(row.BoundRatio), f(row.ExactCov), f(row.NetCov), f(row.NearestShare))...)
	}
	return t
}

// Report is Truth's table alone: every trace estimator, t_θ and ȳ_θ
// against the exact Fisher of the problem's training points.
func (tr *TruthResult) Report() (*report.Report, error) {
	title := "Ground truth: the exact Fisher of the " + thousands(tr.TrainPoints) + " training points of " + tr.Problem
	rep := &report.Report{Name: "truth", Title: title,
		Tables: []*report.Table{tr.table("## "+title+"\n\n"+truthSetup,
			"every trace estimator, t_θ and ȳ_θ against the exact Fisher of "+tr.Problem+"'s training points, by time and split")}}
	return rep, rep.Check()
}
