package ot

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dfx-lab/dfx/internal/atomicfile"
)

// Output names written by Result.Write.
const (
	Table3Markdown = "table3.md"
	Table3CSV      = "table3.csv"
	BeyondMarkdown = "beyond.md"
	BeyondCSV      = "beyond.csv"
)

// WriteBeyondMarkdown writes the studies beyond the paper.
func WriteBeyondMarkdown(w io.Writer, rows []BeyondRow, c BeyondConfig) error {
	c.defaults()
	var b strings.Builder
	fmt.Fprintf(&b, "# Beyond Table 3\n\nSchedule %s, RK4 on a Karras grid of %d steps, exact Jacobian Φ = ∂x_s/∂x_T, "+
		"rates in %% over %d chains. fail = fraction of chains not OT-compatible at tol %g; fail@%g = at the looser tolerance.\n",
		c.Schedule, c.Steps, rows0chains(rows), DefaultTol, c.LooseTol)
	sections := []struct{ study, title string }{
		{"random-dirac", "Random non-affine point sets (d + 2 points uniform in [−½, ½]^d), s = TMin"},
		{"random-gmm", "Random mixtures of 3 Gaussians (covariance L Lᵀ · 0.02/d), s where σ = 0.1"},
		{"offset", "Distance from affine: points (δ,0), (0,0.5), (0,−0.6), s = TMin"},
	}
	for _, sec := range sections {
		fmt.Fprintf(&b, "\n## %s\n\n| d | N | δ | I mean ± std | I worst | λ_min | fail | fail@loose |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n", sec.title)
		for _, r := range rows {
			if r.Study != sec.study {
				continue
			}
			fmt.Fprintf(&b, "| %d | %d | %g | %s | %s | %.3g | %.0f%% | %.0f%% |\n", r.Dim, r.N, r.Offset,
				pm(r.Asym), pct(r.Asym.Worst), r.MinEig.Worst, 100*r.FailFrac, 100*r.FailLoose)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func rows0chains(rows []BeyondRow) int {
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Chains
}

// WriteBeyondCSV writes one line per study row; rates are fractions.
func WriteBeyondCSV(w io.Writer, rows []BeyondRow) error {
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	if err := cw.Write([]string{"study", "dim", "n", "offset", "s", "chains", "asym_mean", "asym_std", "asym_worst", "mineig_min", "fail_frac", "fail_loose"}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write([]string{r.Study, strconv.Itoa(r.Dim), strconv.Itoa(r.N), f(r.Offset), f(r.S), strconv.Itoa(r.Chains),
			f(r.Asym.Mean), f(r.Asym.Std), f(r.Asym.Worst), f(r.MinEig.Worst), f(r.FailFrac), f(r.FailLoose)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Table3Markdown returns Table 3 as Markdown (what WriteTables writes).
func (res *Result) Table3Markdown() string {
	var b strings.Builder
	chains := res.Config.Table3.Chains
	if chains == 0 {
		chains = DefaultChains
	}
	_ = WriteTable3Markdown(&b, res.Rows, chains)
	return b.String()
}

// BeyondMarkdown returns the studies beyond the paper as Markdown.
func (res *Result) BeyondMarkdown() string {
	var b strings.Builder
	_ = WriteBeyondMarkdown(&b, res.Beyond, res.Config.Beyond)
	return b.String()
}

// WriteTables writes table3.md/.csv (and beyond.md/.csv when computed) into dir.
func (res *Result) WriteTables(dir string) error {
	chains := res.Config.Table3.Chains
	if chains == 0 {
		chains = DefaultChains
	}
	if err := atomicfile.Write(filepath.Join(dir, Table3Markdown), func(w io.Writer) error { return WriteTable3Markdown(w, res.Rows, chains) }); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, Table3CSV), func(w io.Writer) error { return WriteTable3CSV(w, res.Rows) }); err != nil {
		return err
	}
	if len(res.Beyond) == 0 {
		return nil
	}
	if err := atomicfile.Write(filepath.Join(dir, BeyondMarkdown), func(w io.Writer) error { return WriteBeyondMarkdown(w, res.Beyond, res.Config.Beyond) }); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, BeyondCSV), func(w io.Writer) error { return WriteBeyondCSV(w, res.Beyond) })
}

// Write writes the tables and the figures into dir.
func (res *Result) Write(dir string) error {
	if err := res.WriteTables(dir); err != nil {
		return err
	}
	return res.DrawFigures(dir)
}

// Reproduce runs the OT experiment (Quick or Full) and writes
// table3.md/.csv, beyond.md/.csv and the figures into outDir (the
// repository's figures/ot for the committed outputs).
func Reproduce(ctx context.Context, outDir string, quick bool) error {
	c := Full()
	if quick {
		c = Quick()
	}
	res, err := Run(ctx, c)
	if err != nil {
		return err
	}
	return res.Write(outDir)
}
