package ot

import (
	"fmt"
	"math"
	"strings"
)

func (res *Result) find(proto, sched, data string, rule Rule, steps int) (Summary, bool) {
	for _, r := range res.Rows {
		if r.Protocol == proto && r.Schedule == sched && r.Data == data && r.Rule == rule && (steps == 0 || r.Steps == steps) {
			return r.Summary, true
		}
	}
	return Summary{}, false
}

// CompareMarkdown is the short form of Table 3 for non-affine data: the
// paper's figure next to every protocol's mean asymmetry (in %), and the
// largest asymmetry seen on single-Gaussian and affine data with the exact
// Jacobian.
func (res *Result) CompareMarkdown() string {
	var b strings.Builder
	steps := res.Config.Table3.Steps
	if len(steps) == 0 {
		steps = []int{20, 100, 1000}
	}
	b.WriteString("| schedule | paper |")
	for _, m := range steps {
		fmt.Fprintf(&b, " (a) Euler Φ, M=%d |", m)
	}
	b.WriteString(" (a′) converged Φ | (b) script metric (off-diag) | (b) I of script's A | (b) I of DDIM Φ | chains ≥ paper (b, off-diag) |\n|---|---:|")
	for range steps {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---:|---:|---:|\n")
	cell := func(s Summary, ok bool, off bool) string {
		if !ok {
			return "—"
		}
		if off {
			return pm(s.AsymOffDiag)
		}
		return pm(s.Asym)
	}
	for _, sched := range Table3Schedules {
		fmt.Fprintf(&b, "| %s | %.2f |", sched, PaperReported[sched])
		for _, m := range steps {
			s, ok := res.find(ProtocolPaper, sched, "non-affine", Jacobian, m)
			fmt.Fprintf(&b, " %s |", cell(s, ok, false))
		}
		s, ok := res.find(ProtocolReference, sched, "non-affine", Jacobian, 0)
		fmt.Fprintf(&b, " %s |", cell(s, ok, false))
		s, ok = res.find(ProtocolPublished, sched, "non-affine", PublishedRule, 0)
		fmt.Fprintf(&b, " %s | %s |", cell(s, ok, true), cell(s, ok, false))
		s, ok = res.find(ProtocolPublished, sched, "non-affine", Jacobian, 0)
		frac := "—"
		if h := res.HistPublished[sched]; len(h) > 0 {
			n := 0
			for _, v := range h {
				if 100*v >= PaperReported[sched] {
					n++
				}
			}
			frac = fmt.Sprintf("%.0f%%", 100*float64(n)/float64(len(h)))
		}
		fmt.Fprintf(&b, " %s | %s |\n", cell(s, ok, false), frac)
	}
	worst := 0.0
	for _, r := range res.Rows {
		if r.Data != "non-affine" && r.Rule == Jacobian && !math.IsNaN(r.Summary.Asym.Worst) {
			worst = math.Max(worst, r.Summary.Asym.Worst)
		}
	}
	fmt.Fprintf(&b, "\nSingle-Gaussian and affine data, exact Jacobian, every schedule, protocol and M: largest I over all chains = %.2g.\n", worst)
	return b.String()
}
