package density

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"gonum.org/v1/gonum/mat"
)

// The quick experiment runs end to end on the committed networks and a
// small fitted mixture: the exact mixture's tracked ℓ is its closed-form
// log q at the end (the guidance formula holds at d = 784), every bpd is
// finite, and the report renders.
func TestDensityExperimentQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and the networks")
	}
	cfg := MNISTQuick()
	// A smaller plan than the quick profile's: sharding, reading rows and
	// levels back and the cost table do not depend on its size.
	cfg.Traces, cfg.Untils, cfg.UntilTraces = []string{"df-tm-c"}, nil, nil
	env := report.Env{Work: t.TempDir()}
	// Two shards compute the rows between them (each every other row, in
	// its own file, with a partial report); the whole run then reads every
	// row and the network's levels instead of computing them.
	computed := map[string]Row{}
	var levels1 *pfode.Quantiles
	for k := 1; k <= 2; k++ {
		c := cfg
		c.Shard = fmt.Sprintf("%d/2", k)
		part, err := runImages(context.Background(), mnistProblem(c), c, env)
		if err != nil {
			t.Fatal(err)
		}
		if part.Shard == "" || len(part.Costs) != 0 {
			t.Errorf("shard %d: result for shard %q with %d costs, want a partial one", k, part.Shard, len(part.Costs))
		}
		rep, err := part.Report()
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Tables) != 1 || len(rep.Figures) != 0 || !strings.Contains(rep.Tables[0].Markdown(), "partial, shard") {
			t.Errorf("shard %d: the report has %d tables and %d figures, or does not say it is partial", k, len(rep.Tables), len(rep.Figures))
		}
		for _, w := range part.Rows {
			computed[w.key()] = w
		}
		if k == 1 {
			levels1 = part.Levels["network"]
		}
	}
	var log strings.Builder
	env.Log = &log
	res, err := runImages(context.Background(), mnistProblem(cfg), cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	// Each shard's file holds exactly its rows: the positions k−1 mod 2
	// of the table.
	for k := 1; k <= 2; k++ {
		w := readFile(t, filepath.Join(env.Work, workstore.Shard{K: k, N: 2}.File(cfg.stem())))
		var got, want []string
		for _, o := range w.Rows {
			got = append(got, o.Key)
		}
		for p, row := range res.Rows {
			if p%2 == k-1 {
				want = append(want, row.key())
			}
		}
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("shard %d/2 computed %q, want the rows at its positions %q", k, got, want)
		}
	}
	// The whole run computed no rows: its rows' time is the shards' kept
	// seconds alone, and its own time went to the cost table.
	var kept float64
	for k := 1; k <= 2; k++ {
		kept += readFile(t, filepath.Join(env.Work, workstore.Shard{K: k, N: 2}.File(cfg.stem()))).Seconds
	}
	if got := res.RowTime.Seconds(); math.Abs(got-kept) > 1e-6 || res.CostTime <= 0 || res.Elapsed < res.RowTime+res.CostTime {
		t.Errorf("row time %.3f s, want the shards' %.3f s; cost table %v; elapsed %v", got, kept, res.CostTime, res.Elapsed)
	}
	if q, p := res.Levels["network"], levels1; q == nil || p == nil || q.How != p.How || q.Values[0][0] != p.Values[0][0] {
		t.Error("the whole run's network levels are not shard 1's")
	}
	if want := fmt.Sprintf("%d rows read", len(res.Rows)); !strings.Contains(log.String(), want) || len(computed) != len(res.Rows) {
		t.Errorf("the whole run: %d rows, the shards %d, log %q; want %s", len(res.Rows), len(computed), log.String(), want)
	}
	for i, a := range res.Rows {
		if b, ok := computed[a.key()]; !ok || a.Achieved != b.Achieved || a.PerSample != b.PerSample {
			t.Errorf("row %d: %s %+v, computed by a shard as %+v (%v)", i, a.key(), a.Achieved, b.Achieved, ok)
		}
	}
	if !strings.Contains(log.String(), "levels read from") {
		t.Errorf("second run: the network's levels were recomputed (log %q)", log.String())
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
	nets, err := mnist.OpenNetworks("")
	if err != nil {
		t.Fatal(err)
	}
	co, err := schedule.At(mnist.Schedule(), 0.3)
	if err != nil {
		t.Fatal(err)
	}
	x := mnist.InitialNoise(5, 0, 2)
	x.Scale(co.Sigma, x)
	trace := func(name string) []float64 {
		m, err := TraceModel(nets.Net, name, 3, access.PromptRows(mnist.Dim))
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

// The skip mixture's exact trace is a control variate: at noised test
// images at three times, the one-probe variance of Hutchinson on the
// residual is below Hutchinson's on the whole network, and at t = 0.3,
// where the skip fits best, skip-hutchinson:4 is less noisy than
// hutchinson:16 by far. (At t = 0.05 and 0.8 it is not: the residual
// keeps most of the variance there; the log says by how much.) The
// variances are sample variances of 48 one-probe estimates at one point
// (the batch repeats the point; each row draws its own probe).
func TestSkipHutchinsonVariance(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and the networks")
	}
	nets, err := mnist.OpenNetworks("")
	if err != nil {
		t.Fatal(err)
	}
	x0, err := mnist.TestImages(1)
	if err != nil {
		t.Fatal(err)
	}
	const draws = 48
	noise := mnist.InitialNoise(11, 0, 1)
	plain, err := TraceModel(nets.Net, "hutchinson:1", 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := TraceModel(nets.Net, "skip-hutchinson:1", 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	variance := func(m score.Model, co schedule.Coefficients, x *mat.Dense) float64 {
		ev, err := m.Eval(co, x, score.WantTrace)
		if err != nil {
			t.Fatal(err)
		}
		var s, s2 float64
		for _, v := range ev.Trace {
			s += v
		}
		mean := s / float64(len(ev.Trace))
		for _, v := range ev.Trace {
			s2 += (v - mean) * (v - mean)
		}
		return s2 / float64(len(ev.Trace)-1)
	}
	for _, tt := range []float64{0.05, 0.3, 0.8} {
		co, err := schedule.At(mnist.Schedule(), tt)
		if err != nil {
			t.Fatal(err)
		}
		// x_t = α x₀ + σ ε with ε the unit-variance noise of the prior.
		_, tMax := mnist.Schedule().Interval()
		sigMax := mnist.Schedule().Sigma(tMax)
		x := mat.NewDense(draws, mnist.Dim, nil)
		for j := range mnist.Dim {
			v := co.Alpha*x0.At(0, j) + co.Sigma*noise.At(0, j)/sigMax
			for i := range draws {
				x.Set(i, j, v)
			}
		}
		vp, vc := variance(plain, co, x), variance(cv, co, x)
		ratio := (vc / 4) / (vp / 16)
		t.Logf("t = %.2f: one-probe variance of tr F: whole network %.4g, residual %.4g; Var(skip-hutchinson:4)/Var(hutchinson:16) = %.3g", tt, vp, vc, ratio)
		if !(vc < vp) {
			t.Errorf("t = %.2f: the residual's one-probe variance %.4g is not below the whole network's %.4g", tt, vc, vp)
		}
		if tt == 0.3 && !(ratio < 0.2) {
			t.Errorf("t = 0.3: Var(skip-hutchinson:4)/Var(hutchinson:16) = %.3g, not below 0.2", ratio)
		}
		if vc <= 0 || vp <= 0 {
			t.Errorf("t = %.2f: a variance is not positive (%g, %g): the probes did not differ", tt, vp, vc)
		}
	}
}

// TestDensityAccuracy: the accuracy–cost table's accuracy columns average
// the right rows (tracking: unguided and offsets; |miss|: quantile rows to
// t_min, not the until rows nor another trace's).
func TestDensityAccuracy(t *testing.T) {
	nan := math.NaN()
	row := func(trace, target string, level, ach, trk, miss float64) Row {
		return Row{Model: "network", Trace: trace, Target: target, Level: level,
			Achieved: stats.Estimate{Mean: ach}, Tracked: stats.Estimate{Mean: trk}, AbsMiss: stats.Estimate{Mean: miss}}
	}
	r := &Result{Rows: []Row{
		row("a", "none", nan, 2.0, 2.1, nan),
		row("a", "offset +300", nan, 1.5, 1.2, nan),
		row("a", "q=0.5", 2.6, 2.8, 2.5, 0.2),
		row("a", "q=0.95", 1.4, 2.2, 1.4, 0.8),
		row("a", "q=0.5, until 0.1", 2.6, 2.4, 2.5, 9),
		row("b", "none", nan, 2.0, 7.0, nan),
		row("b", "q=0.5", 2.6, 2.8, 2.5, 5),
	}}
	track, miss := r.accuracy("network", "a")
	if math.Abs(track-0.2) > 1e-12 || math.Abs(miss-0.5) > 1e-12 {
		t.Errorf("trace a: tracking %g, |miss| %g; want 0.2, 0.5", track, miss)
	}
	if track, miss := r.accuracy("mixture", "a"); !math.IsNaN(track) || !math.IsNaN(miss) {
		t.Errorf("no rows: %g, %g; want NaN", track, miss)
	}
}

// workFile is what the tests read of a work file.
type workFile struct {
	Rows    []struct{ Key string }
	Seconds float64
}

func readFile(t *testing.T, path string) workFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w workFile
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	return w
}
