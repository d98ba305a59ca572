package ot

import (
	"context"
	"fmt"
	"strconv"

	"github.com/dfx-lab/dfx/dfx/report"
)

// For is Quick or Full.
func For(p report.Profile) Config {
	if p == report.Quick {
		return Quick()
	}
	return Full()
}

func init() {
	report.Register(report.Experiment{
		Name: "ot", Doc: "paper Table 3: OT test of PF-ODE maps in both protocols, studies beyond the paper, figures",
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			return report.One(Run(ctx, For(c.Profile)))
		},
	})
}

// BeyondTables are the studies beyond the paper as Markdown (one section
// per study, rates in percent) and CSV (rates as fractions), both "beyond".
func BeyondTables(rows []BeyondRow, c BeyondConfig) []*report.Table {
	c.defaults()
	intro := fmt.Sprintf("# Beyond Table 3\n\nSchedule %s, RK4 on a Karras grid of %d steps, exact Jacobian Φ = ∂x_s/∂x_T, "+
		"rates in %% over %d chains. fail = fraction of chains not OT-compatible at tol %g; fail@%g = at the looser tolerance.",
		c.Schedule, c.Steps, rows0chains(rows), DefaultTol, c.LooseTol)
	studies := []struct{ study, title string }{
		{"random-dirac", "Random non-affine point sets (d + 2 points uniform in [−½, ½]^d), s = TMin"},
		{"random-gmm", "Random mixtures of 3 Gaussians (covariance L Lᵀ · 0.02/d), s where σ = 0.1"},
		{"offset", "Distance from affine: points (δ,0), (0,0.5), (0,−0.6), s = TMin"},
	}
	var sections []*report.Table
	for _, st := range studies {
		sec := &report.Table{Title: "## " + st.title, Align: "rrrrrrrr",
			Header: []string{"d", "N", "δ", "I mean ± std", "I worst", "λ_min", "fail", "fail@loose"}}
		for _, r := range rows {
			if r.Study == st.study {
				sec.Rows = append(sec.Rows, []string{strconv.Itoa(r.Dim), strconv.Itoa(r.N), fmt.Sprintf("%g", r.Offset),
					pm(r.Asym), pct(r.Asym.Worst), fmt.Sprintf("%.3g", r.MinEig.Worst), fmt.Sprintf("%.0f%%", 100*r.FailFrac), fmt.Sprintf("%.0f%%", 100*r.FailLoose)})
			}
		}
		sections = append(sections, sec)
	}
	md := *sections[0]
	md.Name, md.NoCSV = "beyond", true
	md.Caption = "beyond the paper: asymmetry (%) and failure rates of random point sets and Gaussian mixtures in d = 3…10, and of points moved off the line"
	md.Title = intro + "\n\n" + sections[0].Title
	md.More = sections[1:]
	csv := &report.Table{Name: "beyond", NoMarkdown: true,
		Header: []string{"study", "dim", "n", "offset", "s", "chains", "asym_mean", "asym_std", "asym_worst", "mineig_min", "fail_frac", "fail_loose"}}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, r := range rows {
		csv.Rows = append(csv.Rows, []string{r.Study, strconv.Itoa(r.Dim), strconv.Itoa(r.N), f(r.Offset), f(r.S), strconv.Itoa(r.Chains),
			f(r.Asym.Mean), f(r.Asym.Std), f(r.Asym.Worst), f(r.MinEig.Worst), f(r.FailFrac), f(r.FailLoose)})
	}
	return []*report.Table{&md, csv}
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
func (res *Result) Table3Markdown() string { return Table3Tables(res.Rows, res.chains())[0].Markdown() }

// BeyondMarkdown returns the studies beyond the paper as Markdown (beyond.md).
func (res *Result) BeyondMarkdown() string {
	return BeyondTables(res.Beyond, res.Config.Beyond)[0].Markdown()
}

// Report holds table3.md/.csv, beyond.md/.csv (when computed) and the
// figures (when computed).
func (res *Result) Report() (*report.Report, error) {
	r := &report.Report{Name: "ot", Title: "Table 3: numerical OT test of PF-ODE maps, and beyond",
		Tables: Table3Tables(res.Rows, res.chains())}
	if len(res.Beyond) > 0 {
		r.Tables = append(r.Tables, BeyondTables(res.Beyond, res.Config.Beyond)...)
	}
	r.Figures = res.figures()
	return r, nil
}
