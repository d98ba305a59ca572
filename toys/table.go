package toys

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

func pct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

func pm(s Stat) string {
	if s.Std > 0 {
		return fmt.Sprintf("%.2f ± %.2f%%", 100*s.Mean, 100*s.Std)
	}
	return pct(s.Mean)
}

func (r *Result) learned() bool { return len(r.Methods) > 1 }

// table2 is table2.md: the trace errors, then the NLL section and the
// timings, with the paper's figures beside ours.
func (r *Result) table2() *report.Table {
	c := r.Config
	lo, hi := r.Schedule.Interval()
	var b strings.Builder
	fmt.Fprintf(&b, "# Table 2: Fisher-trace error of VJP versus DF-TM on 2-D %s\n\n", c.Dataset)
	b.WriteString("DF-TM-c is ours, beyond the paper: a centred DF-TM whose scalar network ν_θ regresses the frozen score network's per-sample error ‖ε̂_θ − ε‖²/d = (α²/σ²)‖x₀ − ȳ_θ‖²/d, so tr F ≈ (d/σ²)(1 − ν_θ) without the paper's α²/σ⁴ (d t_θ − ‖ȳ_θ‖²) cancellation (access.DFTMCentred). " +
		"Its optimum includes the score network's own error, (α²/σ²)‖ȳ − ȳ_θ‖²/d ≥ 0, so it cannot beat the score network at small σ; " +
		"at large σ, where ν ≈ 2e-3, ν_θ's absolute regression error (≈ 1e-2) sets a ≈ 1% floor that DF-TM does not have.\n\n")
	fmt.Fprintf(&b, "Ground truth: the Dirac mixture of %d points (seed %d), schedule %s; t = 0 is the schedule's smallest time %g. ", c.N, c.DataSeed, r.Schedule, lo)
	fmt.Fprintf(&b, "Relative error Σ|est − exact| / Σ|exact| over %d points x_t ~ q_t per seed; ", c.EvalPoints)
	fmt.Fprintf(&b, "mean ± sd over %d evaluation seed(s) × %d training seed(s).", len(c.EvalSeeds), max(len(c.TrainSeeds), 1))
	if r.learned() {
		fmt.Fprintf(&b, "\n\nNetworks: residual MLP width %d depth %d, %d steps, batch %d (%s).", c.Train.Width, c.Train.Depth, c.Train.Steps, c.Train.BatchSize, r.NetsNotes)
	}
	main := &report.Table{Name: "table2", NoCSV: true, Title: b.String(),
		Caption: fmt.Sprintf("Table 2 on %s: relative Fisher-trace error (%%) of VJP, DF-TM and DF-TM-c against the exact mixture, beside the paper's; NLL errors; cost per query", c.Dataset),
		Header:  []string{"t", "σ_t", "mean exact tr F"}}
	if r.learned() {
		main.Header = append(main.Header, "VJP (ours)", "VJP (paper)", "DF-TM (ours)", "DF-TM (paper)", "DF-TM-c (ours, centred)", "score net ‖Δs‖/‖s‖", "t_θ error")
	}
	nll := &report.Table{Title: fmt.Sprintf("## NLL from t to T\n\n−log q_t(x_t) by the PF-ODE (eq. nll_ode) from t to T = %g with %d %s steps, prior N(0, σ_T² I), against the exact log q_t of the mixture, over %d points (networks of the first training seed); relative error Σ|Δ| / Σ|exact|. ", hi, c.NLLSteps, c.NLLSolver, c.NLLPoints) +
		"The exact-trace column integrates the exact score and trace: its error is the solver's and the prior's. Solver error: step-halving estimate, nats.",
		Header: []string{"t", "mean exact NLL (nats)", "exact trace", "solver err"}}
	if r.learned() {
		nll.Header = append(nll.Header, "VJP", "solver err", "DF-TM", "solver err", "DF-TM-c (ours, centred)", "solver err")
	}
	for _, row := range r.Rows {
		label := row.T
		if row.T == lo {
			label = 0
		}
		cells := []string{fmt.Sprintf("%g", label), fmt.Sprintf("%.3g", row.Sigma), fmt.Sprintf("%.4g", row.ExactTr.Mean)}
		if r.learned() {
			pv, okv := r.paperValue(MethodVJP, label)
			pd, _ := r.paperValue(MethodDFTM, label)
			paper := func(v float64) string {
				if !okv {
					return "–"
				}
				return fmt.Sprintf("%.2f%%", v)
			}
			cells = append(cells, pm(row.TraceErr[MethodVJP]), paper(pv), pm(row.TraceErr[MethodDFTM]), paper(pd), pm(row.TraceErr[MethodDFTMC]), pm(row.ScoreErr), pm(row.TNetErr))
		}
		main.Rows = append(main.Rows, cells)
		cells = []string{fmt.Sprintf("%g", label), fmt.Sprintf("%.4g", row.ExactNLL), pct(row.NLLErr[MethodExact]), fmt.Sprintf("%.3g", row.SolverErr[MethodExact])}
		if r.learned() {
			cells = append(cells, pct(row.NLLErr[MethodVJP]), fmt.Sprintf("%.3g", row.SolverErr[MethodVJP]), pct(row.NLLErr[MethodDFTM]), fmt.Sprintf("%.3g", row.SolverErr[MethodDFTM]), pct(row.NLLErr[MethodDFTMC]), fmt.Sprintf("%.3g", row.SolverErr[MethodDFTMC]))
		}
		nll.Rows = append(nll.Rows, cells)
	}
	main.More = []*report.Table{nll}
	last := nll
	if len(r.Timing) > 0 {
		timing := &report.Table{Title: "## Cost per query at d = 2", Header: []string{"method", "batch", "time per query"}}
		for _, t := range r.Timing {
			timing.Rows = append(timing.Rows, []string{t.Method, fmt.Sprint(t.Batch), fmt.Sprintf("%.3g µs", float64(t.PerQuery.Nanoseconds())/1e3)})
		}
		main.More = append(main.More, timing)
		last = timing
	}
	last.Notes = []string{fmt.Sprintf("Generated by `dfx reproduce toys` in %.0f s.", r.Elapsed.Seconds())}
	return main
}

func f(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

// rowsCSV is table2.csv (withNLL) or curve.csv: full precision, errors
// as fractions.
func (r *Result) rowsCSV(name string, rows []Row, withNLL bool) *report.Table {
	head := []string{"t", "sigma", "exact_trace_mean", "vjp_rel_err", "vjp_rel_err_sd", "dftm_rel_err", "dftm_rel_err_sd", "dftmc_rel_err", "dftmc_rel_err_sd", "score_rel_err", "score_rel_err_sd", "tnet_rel_err", "tnet_rel_err_sd"}
	if withNLL {
		head = append(head, "exact_nll", "nll_rel_err_exact_trace", "nll_solver_err_exact_trace", "nll_rel_err_vjp", "nll_solver_err_vjp", "nll_rel_err_dftm", "nll_solver_err_dftm", "nll_rel_err_dftmc", "nll_solver_err_dftmc", "paper_vjp_pct", "paper_dftm_pct")
	}
	t := &report.Table{Name: name, NoMarkdown: true, Header: head}
	lo, _ := r.Schedule.Interval()
	for _, row := range rows {
		v, d, dc := statOf(row.TraceErr, MethodVJP), statOf(row.TraceErr, MethodDFTM), statOf(row.TraceErr, MethodDFTMC)
		rec := []string{f(row.T), f(row.Sigma), f(row.ExactTr.Mean), f(v.Mean), f(v.Std), f(d.Mean), f(d.Std), f(dc.Mean), f(dc.Std), f(row.ScoreErr.Mean), f(row.ScoreErr.Std), f(row.TNetErr.Mean), f(row.TNetErr.Std)}
		if withNLL {
			label := row.T
			if row.T == lo {
				label = 0
			}
			pv, ok := r.paperValue(MethodVJP, label)
			pd, _ := r.paperValue(MethodDFTM, label)
			ps := []string{"", ""}
			if ok {
				ps = []string{f(pv), f(pd)}
			}
			rec = append(rec, f(row.ExactNLL), f(row.NLLErr[MethodExact]), f(row.SolverErr[MethodExact]),
				f(nanIfMissing(row.NLLErr, MethodVJP)), f(nanIfMissing(row.SolverErr, MethodVJP)),
				f(nanIfMissing(row.NLLErr, MethodDFTM)), f(nanIfMissing(row.SolverErr, MethodDFTM)),
				f(nanIfMissing(row.NLLErr, MethodDFTMC)), f(nanIfMissing(row.SolverErr, MethodDFTMC)), ps[0], ps[1])
		}
		t.Rows = append(t.Rows, rec)
	}
	return t
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
	t := &report.Table{Name: "losses", NoMarkdown: true, Caption: "training loss of every network and seed", Header: []string{"net", "seed", "step", "loss"}}
	for _, c := range r.Losses {
		for i := range c.Step {
			t.Rows = append(t.Rows, []string{c.Net, strconv.FormatUint(c.Seed, 10), strconv.FormatInt(c.Step[i], 10), f(c.Loss[i])})
		}
	}
	return t
}

// Report holds table2.md/.csv, curve.csv, losses.csv and the figures: the
// trace fields, the error versus t, the samples, the losses and, for the
// paper's checkerboard, every data set.
func (r *Result) Report() (*report.Report, error) {
	curve := r.rowsCSV("curve", r.Curve, false)
	curve.Caption = "the trace errors on a fine grid of t (the curves of relerr_vs_t.png), as fractions"
	rep := &report.Report{Name: r.Config.Dataset, Title: fmt.Sprintf("Table 2 pipeline on 2-D %s (%s schedule)", r.Config.Dataset, r.Schedule.Name()),
		Tables: []*report.Table{r.table2(), r.rowsCSV("table2", r.Rows, true), curve}}
	if len(r.Losses) > 0 {
		rep.Tables = append(rep.Tables, r.lossesCSV())
	}
	rep.Figures = r.figures()
	return rep, nil
}
