package ot

import (
	"context"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/report"
)

// For is Quick or Full.
func For(p report.Profile) Config { return report.Pick(p, Quick, Full) }

func init() {
	report.Register(report.Spec[Config]{
		Name: "ot", Doc: "paper Table 3: OT test of PF-ODE maps in both protocols, studies beyond the paper, figures",
		Quick: Quick, Full: Full,
		Run: func(ctx context.Context, c Config, _ report.Env) (report.Result, error) {
			return report.AsResult(Run(ctx, c))
		},
	})
}

// beyondColumns are the columns of the studies beyond the paper: Markdown
// names the study and the chains in its section titles.
var beyondColumns = []report.Column{
	{Name: "study", NoMarkdown: true},
	{Name: "d", Key: "dim"},
	{Name: "N", Key: "n"},
	{Name: "δ", Key: "offset"},
	{Name: "s", NoMarkdown: true},
	{Name: "chains", NoMarkdown: true},
	rateColumn("I mean ± std", "asym_mean", "asym_std"),
	rateColumn("I worst", "asym_worst", ""),
	{Name: "λ_min", Key: "mineig_min", Format: "%.3g"},
	{Name: "fail", Key: "fail_frac", Format: "%.0f%%", Scale: 100},
	{Name: "fail@loose", Key: "fail_loose", Format: "%.0f%%", Scale: 100},
}

// BeyondTable is the studies beyond the paper, beyond.md and beyond.csv:
// one Markdown section per study (rates in percent), one flat CSV (rates
// as fractions).
func BeyondTable(rows []BeyondRow, c BeyondConfig) *report.Table {
	c.defaults()
	intro := fmt.Sprintf("# Beyond Table 3\n\nSchedule %s, RK4 on a Karras grid of %d steps, exact Jacobian Φ = ∂x_s/∂x_T, "+
		"rates in %% over %d chains. fail = fraction of chains not OT-compatible at tol %g; fail@%g = at the looser tolerance.",
		c.Schedule, c.Steps, rows0chains(rows), DefaultTol, c.LooseTol)
	studies := []struct{ study, title string }{
		{"random-dirac", "Random non-affine point sets (d + 2 points uniform in [−½, ½]^d), s = TMin"},
		{"random-gmm", "Random mixtures of 3 Gaussians (covariance L Lᵀ · 0.02/d), s where σ = 0.1"},
		{"offset", "Distance from affine: points (δ,0), (0,0.5), (0,−0.6), s = TMin"},
	}
	t := &report.Table{Name: "beyond", Columns: beyondColumns, Align: "rrrrrrrr",
		Caption: "beyond the paper: asymmetry (%) and failure rates of random point sets and Gaussian mixtures in d = 3…10, and of points moved off the line"}
	for i, st := range studies {
		sec := t
		if i == 0 {
			t.Title = intro + "\n\n## " + st.title
		} else {
			sec = t.Section("## " + st.title)
		}
		for _, r := range rows {
			if r.Study == st.study {
				sec.Add(report.Text(r.Study), report.Int(r.Dim), report.Int(r.N), report.Float(r.Offset), report.Float(r.S), report.Int(r.Chains),
					rateStat(r.Asym), report.Float(r.Asym.Worst), report.Float(r.MinEig.Worst), report.Float(r.FailFrac), report.Float(r.FailLoose))
			}
		}
	}
	return t
}

func rows0chains(rows []BeyondRow) int {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Chains
}

func (res *Result) chains() int {
	if c := res.Config.Table3.Chains; c != 0 {
		return c
	}
	return DefaultChains
}

// Table3Markdown returns Table 3 as Markdown (table3.md).
func (res *Result) Table3Markdown() string { return Table3Table(res.Rows, res.chains()).Markdown() }

// BeyondMarkdown returns the studies beyond the paper as Markdown (beyond.md).
func (res *Result) BeyondMarkdown() string {
	return BeyondTable(res.Beyond, res.Config.Beyond).Markdown()
}

// Report holds table3.md/.csv, beyond.md/.csv (when computed) and the
// figures (when computed).
func (res *Result) Report() (*report.Report, error) {
	r := &report.Report{Name: "ot", Title: "Table 3: numerical OT test of PF-ODE maps, and beyond",
		Tables: []*report.Table{Table3Table(res.Rows, res.chains())}}
	if len(res.Beyond) > 0 {
		r.Tables = append(r.Tables, BeyondTable(res.Beyond, res.Config.Beyond))
	}
	r.Figures = res.figures()
	return r, nil
}
