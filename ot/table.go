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

// rateColumn is a column of asymmetry rates: fractions in CSV, percent in
// Markdown; SEKey names a standard deviation's column.
func rateColumn(name, key, stdKey string) report.Column {
	return report.Column{Name: name, Key: key, SEKey: stdKey, Format: "%.2f", Scale: 100, Blank: "—"}
}

// rateStat is a rate's mean ± standard deviation over the chains.
func rateStat(s Stat) report.Cell { return report.FloatSE(s.Mean, s.Std) }

// table3Columns are Table 3's columns: Markdown leaves out what its
// section titles and the verdict say; CSV has rates as fractions.
var table3Columns = []report.Column{
	{Name: "protocol", NoMarkdown: true},
	{Name: "schedule"},
	{Name: "data"},
	{Name: "s", NoMarkdown: true},
	{Name: "M", Key: "steps"},
	{Name: "grid", NoMarkdown: true},
	{Name: "solver", NoMarkdown: true},
	{Name: "matrix"},
	{Name: "chains", NoMarkdown: true},
	rateColumn("I mean ± std", "asym_mean", "asym_std"),
	rateColumn("I worst", "asym_worst", ""),
	rateColumn("off-diag mean ± std", "offdiag_mean", "offdiag_std"),
	{Key: "offdiag_worst", NoMarkdown: true},
	rateColumn("I(A⁻¹) mean", "inverse_mean", ""),
	{Name: "λ_min", Key: "mineig_min", Format: "%.3g"},
	{Key: "mineig_mean", NoMarkdown: true},
	{Key: "fail_frac", NoMarkdown: true},
	{Key: "ot", NoMarkdown: true},
	{Name: "verdict", NoCSV: true},
	{Name: "paper", Key: "paper_pct", Format: "%.2f"},
}

// Table3Table is Table 3, table3.md and table3.csv: in Markdown one
// section per protocol (rates in percent; "off-diag" is the published
// script's variant; chains is the default number of chains, each
// section's own count is in its title), in CSV one flat table (rates as
// fractions).
func Table3Table(rows []Row, chains int) *report.Table {
	intro := fmt.Sprintf("# Table 3: numerical OT test of PF-ODE maps\n\n"+
		"Asymmetry rate I = ‖A − Aᵀ‖_F / (√2 ‖A‖_F) in %%, mean ± std over the chains (%d unless the section says otherwise; float64); "+
		"worst = largest; off-diag = the published script's I with the diagonal zeroed; I(A⁻¹) = the rate of the inverse map; "+
		"λ_min = smallest eigenvalue of ½(A + Aᵀ) over all chains; OT iff I < %g and λ_min > 0 on every chain. "+
		"Single Gaussian: mean (0.5, 0.5), covariance [[0.05, 0.02], [0.02, 0.03]], s = 0.1; other data: s = TMin "+
		"(paper text) or t = 0 (published grid). Paper = the paper's reported rate.", chains, DefaultTol)
	t := &report.Table{Name: "table3", Title: intro, Align: "llrlrrrrrlr", Columns: table3Columns,
		Caption: "Table 3: asymmetry rate (%) and verdict of every protocol, schedule, data set and step count, beside the paper's rate"}
	first := true
	for _, proto := range []string{ProtocolPaper, ProtocolReference, ProtocolPublished} {
		var sec *report.Table
		for _, r := range rows {
			if r.Protocol != proto {
				continue
			}
			if sec == nil {
				title := fmt.Sprintf("## %s; %d chains", protocolTitles[proto], r.Summary.Chains)
				if first {
					t.Title, sec, first = intro+"\n\n"+title, t, false
				} else {
					sec = t.Section(title)
				}
			}
			s := r.Summary
			sec.Add(report.Text(r.Protocol), report.Text(r.Schedule), report.Text(r.Data), report.Float(r.S), report.Int(r.Steps),
				report.Text(r.Grid), report.Text(r.Solver.Name()), report.Text(string(r.Rule)), report.Int(s.Chains),
				rateStat(s.Asym), report.Float(s.Asym.Worst), rateStat(s.AsymOffDiag), report.Float(s.AsymOffDiag.Worst),
				report.Float(s.AsymInverse.Mean), report.Float(s.MinEig.Worst), report.Float(s.MinEig.Mean), report.Float(s.FailFrac),
				report.Text(strconv.FormatBool(s.OT)), report.Text(verdictWord(s)), report.Float(r.Paper))
		}
	}
	return t
}
