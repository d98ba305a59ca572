package ot

import (
	"context"
	"fmt"
	"strconv"

	"gonum.org/v1/plot"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// The protocols Explore offers.
const (
	ExplorePaper     = "paper (Euler, uniform grid, M = 20)"
	ExploreConverged = "converged (RK4, Karras grid, M = 200)"
)

// ExploreResult is one OT test behind a notebook's knobs: one schedule,
// one protocol, one of the paper's data cases.
type ExploreResult struct {
	Schedule, Protocol, Data string
	Steps                    int
	Summary                  Summary
	Rates                    []float64 // I(Φ) per chain
}

// Explore runs the OT test of the exact Jacobian Φ = ∂x_s/∂x_T for one
// schedule (Table3Schedules), protocol (ExplorePaper or ExploreConverged)
// and data case of PaperCases ("non-affine", "affine", "gaussian").
func Explore(ctx context.Context, sched, protocol, data string, chains int, seed uint64) (*ExploreResult, error) {
	s, err := schedule.ByName(sched, schedule.Params{})
	if err != nil {
		return nil, fmt.Errorf("ot: %w", err)
	}
	cases, err := PaperCases()
	if err != nil {
		return nil, err
	}
	var dc *DataCase
	for i := range cases {
		if cases[i].Name == data {
			dc = &cases[i]
		}
	}
	if dc == nil {
		return nil, fmt.Errorf("ot: no data case %q (gaussian, affine, non-affine)", data)
	}
	p := schedule.Continuous{Schedule: s}
	var grid []float64
	solver := Euler
	switch protocol {
	case ExplorePaper:
		grid, err = UniformGrid(p, dc.S, 20)
	case ExploreConverged:
		grid, err = Grid(p, referenceGrid(sched), dc.S, 200)
		solver = RK4
	default:
		return nil, fmt.Errorf("ot: unknown protocol %q", protocol)
	}
	if err != nil {
		return nil, err
	}
	out, err := Test(ctx, Spec{Data: dc.Data, Schedule: p, Grid: grid, Solver: solver, Rules: []Rule{Jacobian}, Chains: chains, Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("ot: %s %s: %w", sched, data, err)
	}
	res := &ExploreResult{Schedule: sched, Protocol: protocol, Data: data, Steps: len(grid) - 1, Summary: out.Summary[0]}
	for _, v := range out.Verdicts[0] {
		res.Rates = append(res.Rates, v.Asym)
	}
	return res, nil
}

// exploreRateColumn is a rate in % with three significant digits: one
// schedule's rates can be far below Table 3's 0.01 % resolution (a map
// that fails by 0.002 % would read "0.00").
func exploreRateColumn(name, key, stdKey string) report.Column {
	c := rateColumn(name, key, stdKey)
	c.Format = "%.3g"
	return c
}

// Report is a one-row table and the histogram of the per-chain rates.
func (r *ExploreResult) Report() (*report.Report, error) {
	s := r.Summary
	t := &report.Table{Name: "explore", Title: fmt.Sprintf("### %s schedule, %s data, %s", r.Schedule, r.Data, r.Protocol),
		Columns: []report.Column{
			{Name: "chains"},
			exploreRateColumn("I(Φ) mean ± std (%)", "asym_mean", "asym_std"),
			exploreRateColumn("worst I(Φ) (%)", "asym_worst", ""),
			{Name: "smallest eigenvalue of sym Φ", Key: "mineig_min", Format: "%.3g"},
			{Key: "fail_frac", NoMarkdown: true},
			{Key: "ot", NoMarkdown: true},
			{Name: "verdict", NoCSV: true},
		}, Align: "rrrrl",
		Notes: []string{"I(Φ) = ‖Φ − Φᵀ‖_F / (√2 ‖Φ‖_F) of the exact Jacobian of the computed map x_T ↦ x_s; a map " +
			"is OT-compatible when I = 0 (to round-off) and ½(Φ + Φᵀ) ≻ 0 (Corollary 1)."}}
	t.Add(report.Int(s.Chains), rateStat(s.Asym), report.Float(s.Asym.Worst), report.Float(s.MinEig.Worst),
		report.Float(s.FailFrac), report.Text(strconv.FormatBool(s.OT)), report.Text(verdictWord(s)))
	fig := plotFigure("explore.png", "per-chain asymmetry rate I(Φ) in %", func() (*plot.Plot, error) {
		return histPlot(fmt.Sprintf("%s, %s data, %s", r.Schedule, r.Data, r.Protocol), "I(Φ) (%)", map[string][]float64{r.Schedule: r.Rates}, nil)
	})
	return &report.Report{Name: "ot-explore", Tables: []*report.Table{t}, Figures: []*report.Figure{fig}}, nil
}
