package access

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dfx-lab/dfx/dfx/report"
)

// PaperTable2 holds the paper's Table 2 (relative trace error, %, at
// t = 1.0, 0.8, 0.6, 0.4, 0.2, 0.0 on the 2-D chessboard, VE schedule).
var PaperTable2 = map[string][]float64{
	MethodVJP:  {6.68, 5.79, 10.46, 20.13, 51.14, 70.95},
	MethodDFTM: {3.41, 4.56, 4.13, 4.28, 5.33, 5.81},
}

var paperTimes = []float64{1, 0.8, 0.6, 0.4, 0.2, 0}

// hasPaper reports whether the paper's Table 2 applies: the chessboard
// under the VE schedule.
func (r *Result) hasPaper() bool {
	return r.Config.Dataset == "checkerboard" && r.Schedule.Name() == "ve"
}

// paperValue is the paper's figure for a method at a configured time, when
// the paper has one for this data set.
func (r *Result) paperValue(method string, t float64) (float64, bool) {
	if !r.hasPaper() {
		return 0, false
	}
	for i, pt := range paperTimes {
		if pt == t {
			return PaperTable2[method][i], true
		}
	}
	return 0, false
}

func (r *Result) learned() bool { return len(r.Methods) > 1 }

// errCell is a relative error's mean ± sd over the seeds; with no spread
// (one seed) the mean alone.
func errCell(s Stat) report.Cell {
	if s.Std == 0 {
		return report.Float(s.Mean)
	}
	return report.FloatSE(s.Mean, s.Std)
}

// relErr is a column of relative errors: fractions in CSV, percent in
// Markdown; sd names the CSV column of the spread over seeds.
func relErr(name, key, sd string) report.Column {
	return report.Column{Name: name, Key: key, SEKey: sd, Format: "%.2f%%", Scale: 100}
}

// errorColumns are the columns of table2.csv (withNLL) or curve.csv, and
// "t_label", the time Markdown shows (0 for the schedule's smallest).
func errorColumns(withNLL bool) []report.Column {
	cols := []report.Column{
		{Name: "t", Key: "t_label", NoCSV: true},
		{Name: "t"},
		{Name: "σ_t", Key: "sigma", Format: "%.3g"},
		{Name: "mean exact tr F", Key: "exact_trace_mean", Format: "%.4g"},
		relErr("VJP (ours)", "vjp_rel_err", "vjp_rel_err_sd"),
		relErr("DF-TM (ours)", "dftm_rel_err", "dftm_rel_err_sd"),
		relErr("DF-TM-c (ours, centred)", "dftmc_rel_err", "dftmc_rel_err_sd"),
		relErr("score net ‖Δs‖/‖s‖", "score_rel_err", "score_rel_err_sd"),
		relErr("t_θ error", "tnet_rel_err", "tnet_rel_err_sd"),
	}
	if !withNLL {
		return cols
	}
	solver := func(key string) report.Column { return report.Column{Name: "solver err", Key: key, Format: "%.3g"} }
	return append(cols,
		report.Column{Name: "mean exact NLL (nats)", Key: "exact_nll", Format: "%.4g"},
		relErr("exact trace", "nll_rel_err_exact_trace", ""), solver("nll_solver_err_exact_trace"),
		relErr("VJP", "nll_rel_err_vjp", ""), solver("nll_solver_err_vjp"),
		relErr("DF-TM", "nll_rel_err_dftm", ""), solver("nll_solver_err_dftm"),
		relErr("DF-TM-c (ours, centred)", "nll_rel_err_dftmc", ""), solver("nll_solver_err_dftmc"),
		report.Column{Name: "VJP (paper)", Key: "paper_vjp_pct", Format: "%.2f%%"},
		report.Column{Name: "DF-TM (paper)", Key: "paper_dftm_pct", Format: "%.2f%%"},
	)
}

// errorTable is table2 (withNLL) or curve: one row per time, errors as
// fractions, every column in CSV; Markdown shows the trace errors beside
// the paper's (what table2 shows).
func (r *Result) errorTable(name string, rows []Row, withNLL bool) *report.Table {
	t := &report.Table{Name: name, Columns: errorColumns(withNLL), Show: []string{"t_label", "sigma", "exact_trace_mean"}}
	if r.learned() && withNLL {
		t.Show = append(t.Show, "vjp_rel_err", "paper_vjp_pct", "dftm_rel_err", "paper_dftm_pct", "dftmc_rel_err", "score_rel_err", "tnet_rel_err")
	} else if r.learned() {
		t.Show = append(t.Show, "vjp_rel_err", "dftm_rel_err", "dftmc_rel_err", "score_rel_err", "tnet_rel_err")
	}
	lo, _ := r.Schedule.Interval()
	for _, row := range rows {
		label := row.T
		if row.T == lo {
			label = 0
		}
		cells := []report.Cell{report.Float(label), report.Float(row.T), report.Float(row.Sigma), report.Float(row.ExactTr.Mean),
			errCell(statOf(row.TraceErr, MethodVJP)), errCell(statOf(row.TraceErr, MethodDFTM)), errCell(statOf(row.TraceErr, MethodDFTMC)),
			errCell(row.ScoreErr), errCell(row.TNetErr)}
		if withNLL {
			paper := func(method string) report.Cell {
				if _, ok := r.paperValue(MethodVJP, label); !ok {
					return report.None()
				}
				v, _ := r.paperValue(method, label)
				return report.Float(v)
			}
			cells = append(cells, report.Float(row.ExactNLL), report.Float(row.NLLErr[MethodExact]), report.Float(row.SolverErr[MethodExact]))
			for _, m := range []string{MethodVJP, MethodDFTM, MethodDFTMC} {
				cells = append(cells, report.Float(nanIfMissing(row.NLLErr, m)), report.Float(nanIfMissing(row.SolverErr, m)))
			}
			cells = append(cells, paper(MethodVJP), paper(MethodDFTM))
		}
		t.Add(cells...)
	}
	return t
}

// table2 is table2.md and table2.csv: the trace errors, then the NLL
// section (a View of the same rows) and the timings, with the paper's
// figures beside ours.
func (r *Result) table2() *report.Table {
	c := r.Config
	lo, hi := r.Schedule.Interval()
	var b strings.Builder
	fmt.Fprintf(&b, "# Table 2: Fisher-trace error of VJP versus DF-TM on 2-D %s\n\n", c.Dataset)
	b.WriteString("DF-TM-c is ours, beyond the paper: a centred DF-TM, tr F ≈ (d/σ²)(1 − ν_θ) (access.DFTMCentred); NOTES.md has its reading.\n\n")
	fmt.Fprintf(&b, "Ground truth: the Dirac mixture of %d points (seed %d), schedule %s; t = 0 is the schedule's smallest time %g. ",
		c.N, c.DataSeed, r.Schedule, lo)
	fmt.Fprintf(&b, "Relative error Σ|est − exact| / Σ|exact| over %d points x_t ~ q_t per seed; ", c.EvalPoints)
	fmt.Fprintf(&b, "mean ± sd over %d evaluation seed(s) × %d training seed(s).", len(c.EvalSeeds), max(len(c.TrainSeeds), 1))
	if r.learned() {
		fmt.Fprintf(&b, "\n\nNetworks: residual MLP width %d depth %d, %d steps, batch %d (%s).",
			c.Train.Width, c.Train.Depth, c.Train.Steps, c.Train.BatchSize, r.NetsNotes)
	}
	main := r.errorTable("table2", r.Rows, true)
	main.Title = b.String()
	main.Caption = fmt.Sprintf("Table 2 on %s: relative Fisher-trace error (%%) of VJP, DF-TM and DF-TM-c against the exact mixture, "+
		"beside the paper's; NLL errors; cost per query", c.Dataset)
	nllKeys := []string{"t_label", "exact_nll", "nll_rel_err_exact_trace", "nll_solver_err_exact_trace"}
	if r.learned() {
		nllKeys = append(nllKeys, "nll_rel_err_vjp", "nll_solver_err_vjp", "nll_rel_err_dftm", "nll_solver_err_dftm",
			"nll_rel_err_dftmc", "nll_solver_err_dftmc")
	}
	nll := fmt.Sprintf("## NLL from t to T\n\n−log q_t(x_t) by the PF-ODE (eq. nll_ode) from t to T = %g with %d %s steps, prior N(0, σ_T² I), "+
		"against the exact log q_t of the mixture, over %d points (networks of the first training seed); relative error Σ|Δ| / Σ|exact|. ",
		hi, c.NLLSteps, c.NLLSolver, c.NLLPoints)
	last := main.View(nll+"The exact-trace column integrates the exact score and trace: its error is the solver's and the prior's. "+
		"Solver error: step-halving estimate, nats.", nllKeys...)
	if len(r.Timing) > 0 {
		timing := &report.Table{Title: "## Cost per query at d = 2", Columns: []report.Column{
			{Name: "method"}, {Name: "batch"}, {Name: "time per query", Key: "time_per_query", Unit: "s", Format: "%.3g µs", Scale: 1e6}}}
		for _, t := range r.Timing {
			timing.Add(report.Text(t.Method), report.Int(t.Batch), report.Float(t.PerQuery.Seconds()))
		}
		main.More = append(main.More, timing)
		last = timing
	}
	last.Notes = []string{fmt.Sprintf("Generated by `dfx reproduce toys` in %.0f s.", r.Elapsed.Seconds())}
	return main
}

var nan = math.NaN()

func statOf(m map[string]Stat, k string) Stat {
	if v, ok := m[k]; ok {
		return v
	}
	return Stat{nan, nan}
}

func nanIfMissing(m map[string]float64, k string) float64 {
	if v, ok := m[k]; ok {
		return v
	}
	return nan
}

// lossesCSV is losses.csv: every training loss curve.
func (r *Result) lossesCSV() *report.Table {
	t := &report.Table{Name: "losses", NoMarkdown: true, Caption: "training loss of every network and seed",
		Columns: []report.Column{{Name: "net"}, {Name: "seed"}, {Name: "step"}, {Name: "loss"}}}
	for _, c := range r.Losses {
		for i := range c.Step {
			t.Add(report.Text(c.Net), report.Text(strconv.FormatUint(c.Seed, 10)), report.Int(int(c.Step[i])), report.Float(c.Loss[i]))
		}
	}
	return t
}

// Report holds table2.md/.csv, curve.csv, losses.csv and the figures: the
// trace fields, the error versus t, the samples, the losses and, for the
// paper's checkerboard, every data set.
func (r *Result) Report() (*report.Report, error) {
	curve := r.errorTable("curve", r.Curve, false)
	curve.NoMarkdown = true
	curve.Caption = "the trace errors on a fine grid of t (the curves of relerr_vs_t.png), as fractions"
	rep := &report.Report{Name: r.Config.Dataset, Title: fmt.Sprintf("Table 2 pipeline on 2-D %s (%s schedule)", r.Config.Dataset, r.Schedule.Name()),
		Tables: []*report.Table{r.table2(), curve}}
	if len(r.Losses) > 0 {
		rep.Tables = append(rep.Tables, r.lossesCSV())
	}
	rep.Figures = r.figures()
	return rep, nil
}
