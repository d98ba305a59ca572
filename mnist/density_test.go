package mnist

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/models"
)

// The quick experiment runs end to end on the committed networks and a
// small fitted mixture: the exact mixture's tracked ℓ is its closed-form
// log q at the end (the guidance formula holds at d = 784), every bpd is
// finite, and the report renders.
func TestDensityExperimentQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and the networks")
	}
	cfg := DensityExpQuick("")
	cfg.Work = t.TempDir()
	res, err := RunDensityExp(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// A second run reads every row and the network's levels from the work
	// folder instead of computing them.
	var log strings.Builder
	again, err := RunDensityExp(context.Background(), cfg, &log)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d rows read", len(res.Rows)); !strings.Contains(log.String(), want) || len(again.Rows) != len(res.Rows) {
		t.Errorf("second run: %d rows, log %q; want %s", len(again.Rows), log.String(), want)
	}
	for i := range again.Rows {
		if a, b := again.Rows[i], res.Rows[i]; a.key() != b.key() || a.Achieved != b.Achieved || a.PerSample != b.PerSample {
			t.Errorf("row %d: %s %+v read back as %s %+v", i, b.key(), b.Achieved, a.key(), a.Achieved)
		}
	}
	if !strings.Contains(log.String(), "levels read from") {
		t.Errorf("second run: the network's levels were recomputed (log %q)", log.String())
	}
	if q := again.Levels["network"]; q == nil || q.How != res.Levels["network"].How || q.Values[0][0] != res.Levels["network"].Values[0][0] {
		t.Error("the network's levels were not read back")
	}
	for _, w := range res.Rows {
		t.Logf("%-8s %-12s %-18s level %.4f achieved %.4f tracked %.4f ink %.3f frame %.3f detail %.4f", w.Model, w.Trace, w.Target, w.Level, w.Achieved.Mean, w.Tracked.Mean, w.Ink, w.Frame, w.Detail)
		if math.IsNaN(w.Achieved.Mean) || math.IsInf(w.Achieved.Mean, 0) {
			t.Errorf("%s %s %s: achieved %v", w.Model, w.Trace, w.Target, w.Achieved.Mean)
		}
		if w.Model == "mixture" && math.Abs(w.Achieved.Mean-w.Tracked.Mean) > 0.01 {
			t.Errorf("mixture %s: tracked %.5f bpd, exact %.5f", w.Target, w.Tracked.Mean, w.Achieved.Mean)
		}
	}
	if len(res.Costs) != 1+len(cfg.Traces) {
		t.Errorf("%d costs, want the mixture's and one per trace (%d)", len(res.Costs), len(cfg.Traces))
	}
	for _, k := range res.Costs {
		if k.PerStep <= 0 || k.PerSample <= 0 || k.Rounds != cfg.CostRounds {
			t.Errorf("cost %s %s: %v a step, %v a sample, %d rounds", k.Model, k.Trace, k.PerStep, k.PerSample, k.Rounds)
		}
	}
	rep, err := res.Report()
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Figures {
		if _, err := f.Render("png"); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
	if md := rep.Tables[0].Markdown(); strings.Contains(md, "NaN") {
		t.Errorf("NaN in the report:\n%s", md)
	}
}

func TestParseDensityTarget(t *testing.T) {
	for _, s := range []string{"offset:100", "offset:-3.5", "quantile:0.5"} {
		if _, _, err := ParseDensityTarget(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "offset", "offset:x", "quantile:0", "quantile:1", "quantile:NaN", "offset:Inf", "level:0.5"} {
		if _, _, err := ParseDensityTarget(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	_ = report.Quick
}

// skip-hutchinson (the skip mixture's exact trace plus Hutchinson on the
// residual) is an unbiased trace of the committed network: at two points
// it is within 0.4 % of the exact VJP trace, and the residual it
// estimates is not negligible (the skip's trace alone misses by more).
func TestSkipHutchinsonTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the networks; 784 VJPs a point")
	}
	nets, err := OpenNetworks("")
	if err != nil {
		t.Fatal(err)
	}
	co, err := schedule.At(Schedule(), 0.3)
	if err != nil {
		t.Fatal(err)
	}
	x := InitialNoise(5, 0, 2)
	x.Scale(co.Sigma, x)
	trace := func(name string) []float64 {
		m, err := nets.TraceModel(name, 3)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := m.Eval(co, x, score.WantTrace)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Trace
	}
	exact, cv, plain := trace("vjp"), trace("skip-hutchinson:32"), trace("hutchinson:32")
	skip, err := models.MixtureSkipOf(nets.Store)
	if err != nil {
		t.Fatal(err)
	}
	known, err := score.Exact{Mixture: skip}.Trace(co, x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range exact {
		rel := math.Abs(cv[i]-exact[i]) / math.Abs(exact[i])
		t.Logf("point %d: exact %.2f, skip-hutchinson:32 %.2f (rel. %.2g), hutchinson:32 %.2f, skip alone %.2f", i, exact[i], cv[i], rel, plain[i], known[i])
		if rel > 0.004 {
			t.Errorf("point %d: skip-hutchinson:32 %.3f, exact %.3f (rel. %.3g > 0.004)", i, cv[i], exact[i], rel)
		}
		if math.Abs(known[i]-exact[i]) < 2*math.Abs(cv[i]-exact[i]) {
			t.Errorf("point %d: the skip's trace alone (%.3f) is as close as the control variate (%.3f): the test cannot see the residual", i, known[i], cv[i])
		}
	}
	if _, err := CheckTrace("skip-hutchinson:0"); err == nil {
		t.Error("skip-hutchinson:0 accepted")
	}
}
