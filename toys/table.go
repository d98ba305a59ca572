package toys

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dfx-lab/dfx/internal/atomicfile"
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

// Write writes table2.md, table2.csv, curve.csv, losses.csv, timing.md and
// the figures into dir.
func (r *Result) Write(dir string) error {
	if err := atomicfile.Write(filepath.Join(dir, "table2.md"), r.writeMarkdown); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "table2.csv"), func(w io.Writer) error { return r.writeRowsCSV(w, r.Rows, true) }); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, "curve.csv"), func(w io.Writer) error { return r.writeRowsCSV(w, r.Curve, false) }); err != nil {
		return err
	}
	if len(r.Losses) > 0 {
		if err := atomicfile.Write(filepath.Join(dir, "losses.csv"), r.writeLossesCSV); err != nil {
			return err
		}
	}
	return r.writeFigures(dir)
}

func pct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

func pm(s Stat) string {
	if s.Std > 0 {
		return fmt.Sprintf("%.2f ± %.2f%%", 100*s.Mean, 100*s.Std)
	}
	return pct(s.Mean)
}

func (r *Result) learned() bool { return len(r.Methods) > 1 }

func (r *Result) writeMarkdown(w io.Writer) error {
	c := r.Config
	lo, _ := r.Schedule.Interval()
	var b strings.Builder
	fmt.Fprintf(&b, "# Table 2: Fisher-trace error of VJP versus DF-TM on 2-D %s\n\n", c.Dataset)
	b.WriteString("DF-TM-c is ours, beyond the paper: a centred DF-TM whose scalar network ν_θ regresses the frozen score network's per-sample error ‖ε̂_θ − ε‖²/d = (α²/σ²)‖x₀ − ȳ_θ‖²/d, so tr F ≈ (d/σ²)(1 − ν_θ) without the paper's α²/σ⁴ (d t_θ − ‖ȳ_θ‖²) cancellation (access.DFTMCentred). " +
		"Its optimum includes the score network's own error, (α²/σ²)‖ȳ − ȳ_θ‖²/d ≥ 0, so it cannot beat the score network at small σ; " +
		"at large σ, where ν ≈ 2e-3, ν_θ's absolute regression error (≈ 1e-2) sets a ≈ 1% floor that DF-TM does not have.\n\n")
	fmt.Fprintf(&b, "Ground truth: the Dirac mixture of %d points (seed %d), schedule %s; t = 0 is the schedule's smallest time %g. ", c.N, c.DataSeed, r.Schedule, lo)
	fmt.Fprintf(&b, "Relative error Σ|est − exact| / Σ|exact| over %d points x_t ~ q_t per seed; ", c.EvalPoints)
	fmt.Fprintf(&b, "mean ± sd over %d evaluation seed(s) × %d training seed(s).\n\n", len(c.EvalSeeds), max(len(c.TrainSeeds), 1))
	if r.learned() {
		fmt.Fprintf(&b, "Networks: residual MLP width %d depth %d, %d steps, batch %d (%s).\n\n", c.Train.Width, c.Train.Depth, c.Train.Steps, c.Train.BatchSize, r.NetsNotes)
	}
	b.WriteString("| t | σ_t | mean exact tr F |")
	if r.learned() {
		b.WriteString(" VJP (ours) | VJP (paper) | DF-TM (ours) | DF-TM (paper) | DF-TM-c (ours, centred) | score net ‖Δs‖/‖s‖ | t_θ error |")
	}
	b.WriteString("\n|---|---|---|")
	if r.learned() {
		b.WriteString("---|---|---|---|---|---|---|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		label := row.T
		if row.T == lo {
			label = 0
		}
		fmt.Fprintf(&b, "| %g | %.3g | %.4g |", label, row.Sigma, row.ExactTr.Mean)
		if r.learned() {
			pv, okv := r.paperValue(MethodVJP, label)
			pd, _ := r.paperValue(MethodDFTM, label)
			paper := func(v float64) string {
				if !okv {
					return "–"
				}
				return fmt.Sprintf("%.2f%%", v)
			}
			fmt.Fprintf(&b, " %s | %s | %s | %s | %s | %s | %s |", pm(row.TraceErr[MethodVJP]), paper(pv), pm(row.TraceErr[MethodDFTM]), paper(pd), pm(row.TraceErr[MethodDFTMC]), pm(row.ScoreErr), pm(row.TNetErr))
		}
		b.WriteString("\n")
	}
	_, hi := r.Schedule.Interval()
	fmt.Fprintf(&b, "\n## NLL from t to T\n\n−log q_t(x_t) by the PF-ODE (eq. nll_ode) from t to T = %g with %d %s steps, prior N(0, σ_T² I), against the exact log q_t of the mixture, over %d points (networks of the first training seed); relative error Σ|Δ| / Σ|exact|. ", hi, c.NLLSteps, c.NLLSolver, c.NLLPoints)
	b.WriteString("The exact-trace column integrates the exact score and trace: its error is the solver's and the prior's. Solver error: step-halving estimate, nats.\n\n")
	b.WriteString("| t | mean exact NLL (nats) | exact trace | solver err |")
	if r.learned() {
		b.WriteString(" VJP | solver err | DF-TM | solver err | DF-TM-c (ours, centred) | solver err |")
	}
	b.WriteString("\n|---|---|---|---|")
	if r.learned() {
		b.WriteString("---|---|---|---|---|---|")
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		label := row.T
		if row.T == lo {
			label = 0
		}
		fmt.Fprintf(&b, "| %g | %.4g | %s | %.3g |", label, row.ExactNLL, pct(row.NLLErr[MethodExact]), row.SolverErr[MethodExact])
		if r.learned() {
			fmt.Fprintf(&b, " %s | %.3g | %s | %.3g | %s | %.3g |", pct(row.NLLErr[MethodVJP]), row.SolverErr[MethodVJP], pct(row.NLLErr[MethodDFTM]), row.SolverErr[MethodDFTM], pct(row.NLLErr[MethodDFTMC]), row.SolverErr[MethodDFTMC])
		}
		b.WriteString("\n")
	}
	if len(r.Timing) > 0 {
		b.WriteString("\n## Cost per query at d = 2\n\n| method | batch | time per query |\n|---|---|---|\n")
		for _, t := range r.Timing {
			fmt.Fprintf(&b, "| %s | %d | %.3g µs |\n", t.Method, t.Batch, float64(t.PerQuery.Nanoseconds())/1e3)
		}
	}
	fmt.Fprintf(&b, "\nGenerated by `dfx reproduce toys` in %.0f s.\n", r.Elapsed.Seconds())
	_, err := io.WriteString(w, b.String())
	return err
}

func f(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

func (r *Result) writeRowsCSV(w io.Writer, rows []Row, withNLL bool) error {
	cw := csv.NewWriter(w)
	head := []string{"t", "sigma", "exact_trace_mean", "vjp_rel_err", "vjp_rel_err_sd", "dftm_rel_err", "dftm_rel_err_sd", "dftmc_rel_err", "dftmc_rel_err_sd", "score_rel_err", "score_rel_err_sd", "tnet_rel_err", "tnet_rel_err_sd"}
	if withNLL {
		head = append(head, "exact_nll", "nll_rel_err_exact_trace", "nll_solver_err_exact_trace", "nll_rel_err_vjp", "nll_solver_err_vjp", "nll_rel_err_dftm", "nll_solver_err_dftm", "nll_rel_err_dftmc", "nll_solver_err_dftmc", "paper_vjp_pct", "paper_dftm_pct")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
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
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
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

func (r *Result) writeLossesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"net", "seed", "step", "loss"}); err != nil {
		return err
	}
	for _, c := range r.Losses {
		for i := range c.Step {
			if err := cw.Write([]string{c.Net, strconv.FormatUint(c.Seed, 10), strconv.Itoa(c.Step[i]), f(c.Loss[i])}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
