package ot

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dfx-lab/dfx/dfx/report"
)

func pct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.2f", 100*v)
}

func pm(s Stat) string {
	if math.IsNaN(s.Mean) {
		return "—"
	}
	return fmt.Sprintf("%s ± %s", pct(s.Mean), pct(s.Std))
}

func verdictWord(s Summary) string {
	if s.OT {
		return "✓ OT"
	}
	return fmt.Sprintf("✗ (%.1f%% fail)", 100*s.FailFrac)
}

var protocolTitles = map[string]string{
	ProtocolPaper: "(a) The paper's text: continuous schedules, uniform grid in t, Euler states, " +
		"x_T ~ N(0, σ_T² I); matrix = exact Jacobian Φ = ∂x_s/∂x_T of the Euler map (\"jacobian\") " +
		"and the paper's Algorithm A ← A + dt AᵀB (\"paper\")",
	ProtocolReference: "(a′) Converged reference: RK4, Karras (ρ = 7) grid, exact Jacobian Φ",
	ProtocolPublished: "(b) The published script: DDPM scaled-linear table, DDIM linspace timesteps, " +
		"DDIM states, x_T ~ N(0, I); matrix A ← A + dt B A (\"published\") and the exact DDIM Jacobian (\"jacobian\")",
}

// Table3Tables are Table 3 as Markdown (rows grouped by protocol,
// asymmetry rates in percent; "off-diag" is the published script's
// variant; chains is the default number of chains, each section's own
// count is in its title) and as CSV (rates as fractions), both "table3".
func Table3Tables(rows []Row, chains int) []*report.Table {
	intro := fmt.Sprintf("# Table 3: numerical OT test of PF-ODE maps\n\n"+
		"Asymmetry rate I = ‖A − Aᵀ‖_F / (√2 ‖A‖_F) in %%, mean ± std over the chains (%d unless the section says otherwise; float64); "+
		"worst = largest; off-diag = the published script's I with the diagonal zeroed; I(A⁻¹) = the rate of the inverse map; "+
		"λ_min = smallest eigenvalue of ½(A + Aᵀ) over all chains; OT iff I < %g and λ_min > 0 on every chain. "+
		"Single Gaussian: mean (0.5, 0.5), covariance [[0.05, 0.02], [0.02, 0.03]], s = 0.1; other data: s = TMin "+
		"(paper text) or t = 0 (published grid). Paper = the paper's reported rate.", chains, DefaultTol)
	var sections []*report.Table
	for _, proto := range []string{ProtocolPaper, ProtocolReference, ProtocolPublished} {
		var sec *report.Table
		for _, r := range rows {
			if r.Protocol != proto {
				continue
			}
			if sec == nil {
				sec = &report.Table{Title: fmt.Sprintf("## %s; %d chains", protocolTitles[proto], r.Summary.Chains), Align: "llrlrrrrrlr",
					Header: []string{"schedule", "data", "M", "matrix", "I mean ± std", "I worst", "off-diag mean ± std", "I(A⁻¹) mean", "λ_min", "verdict", "paper"}}
				sections = append(sections, sec)
			}
			s := r.Summary
			sec.Rows = append(sec.Rows, []string{r.Schedule, r.Data, strconv.Itoa(r.Steps), string(r.Rule), pm(s.Asym), pct(s.Asym.Worst), pm(s.AsymOffDiag),
				pct(s.AsymInverse.Mean), fmt.Sprintf("%.3g", s.MinEig.Worst), verdictWord(s), fmt.Sprintf("%.2f", r.Paper)})
		}
	}
	md := &report.Table{Name: "table3", NoCSV: true, Title: intro,
		Caption: "Table 3: asymmetry rate (%) and verdict of every protocol, schedule, data set and step count, beside the paper's rate"}
	if len(sections) > 0 {
		*md = *sections[0]
		md.Name, md.NoCSV, md.Caption = "table3", true, "Table 3: asymmetry rate (%) and verdict of every protocol, schedule, data set and step count, beside the paper's rate"
		md.Title = intro + "\n\n" + sections[0].Title
		md.More = sections[1:]
	}
	csv := &report.Table{Name: "table3", NoMarkdown: true, Header: Table3CSVHeader}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, r := range rows {
		s := r.Summary
		csv.Rows = append(csv.Rows, []string{r.Protocol, r.Schedule, r.Data, f(r.S), strconv.Itoa(r.Steps), r.Grid, r.Solver.Name(), string(r.Rule),
			strconv.Itoa(s.Chains), f(s.Asym.Mean), f(s.Asym.Std), f(s.Asym.Worst), f(s.AsymOffDiag.Mean), f(s.AsymOffDiag.Std),
			f(s.AsymOffDiag.Worst), f(s.AsymInverse.Mean), f(s.MinEig.Worst), f(s.MinEig.Mean), f(s.FailFrac),
			strconv.FormatBool(s.OT), f(r.Paper)})
	}
	return []*report.Table{md, csv}
}

// Table3CSVHeader names the CSV columns.
var Table3CSVHeader = []string{"protocol", "schedule", "data", "s", "steps", "grid", "solver", "matrix", "chains",
	"asym_mean", "asym_std", "asym_worst", "offdiag_mean", "offdiag_std", "offdiag_worst",
	"inverse_mean", "mineig_min", "mineig_mean", "fail_frac", "ot", "paper_pct"}
