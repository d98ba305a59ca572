package access

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/toys"
	"gonum.org/v1/gonum/mat"
)

// tiny is a seconds-long configuration: few points, tiny networks.
func tiny(learned bool) Config {
	c := Quick()
	c.N, c.EvalPoints, c.EvalSeeds = 300, 64, []uint64{1, 2}
	c.Times, c.CurveTimes = []float64{1, 0.5, 0}, 3
	c.NLLPoints, c.NLLSteps, c.NLLSolver = 16, 60, likelihood.RK4
	c.HeatTimes, c.HeatGrid = []float64{0.5}, 8
	c.Samples, c.SampleSteps, c.TimingBatch = 50, 10, 32
	c.Learned = learned
	c.Train = toys.TrainConfig{Width: 8, Depth: 1, EmbedDim: 4, Steps: 30, BatchSize: 32, LearningRate: 3e-3, EMADecay: 0.9, LogEvery: 10}
	return c
}

func TestExactSideRunsEndToEndAndItsNLLMatchesTheMixture(t *testing.T) {
	res, err := Run(context.Background(), tiny(false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || len(res.Curve) != 3 || len(res.Heat) != 1 {
		t.Fatalf("rows %d, curve %d, heat %d", len(res.Rows), len(res.Curve), len(res.Heat))
	}
	for _, r := range res.Rows {
		if e := r.NLLErr[MethodExact]; !(e < 0.05) {
			t.Errorf("t = %g: exact-trace NLL relative error %g", r.T, e)
		}
		if !(r.ExactTr.Mean > 0) {
			t.Errorf("t = %g: mean exact trace %g", r.T, r.ExactTr.Mean)
		}
	}
	dir := writeReport(t, res)
	for _, name := range []string{"table2.md", "table2.csv", "curve.csv", "trace_fields.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", name, err)
		}
	}
	if b, err := DatasetsFigure("png", 200, 1); err != nil || len(b) == 0 {
		t.Error(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "table2.md"))
	if !strings.Contains(string(md), "| 0 |") {
		t.Error("table2.md has no row for t = 0 (the schedule's smallest t)")
	}
}

func TestCheckpointsAreReloadedAndGiveTheSameTable(t *testing.T) {
	cfg := tiny(true)
	cfg.Checkpoints = t.TempDir()
	first, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.NetsNotes, "3 networks trained") {
		t.Fatalf("first run: %s", first.NetsNotes)
	}
	second, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.NetsNotes, "3 loaded") {
		t.Fatalf("second run: %s", second.NetsNotes)
	}
	for i := range first.Rows {
		for _, m := range []string{MethodVJP, MethodDFTM, MethodDFTMC} {
			a, b := first.Rows[i].TraceErr[m].Mean, second.Rows[i].TraceErr[m].Mean
			if math.IsNaN(a) || math.Abs(a-b) > 1e-9*math.Abs(a) {
				t.Errorf("t = %g, %s: %g then %g", first.Rows[i].T, m, a, b)
			}
		}
	}
	if len(second.Losses) != 3 || len(second.Losses[0].Loss) != 3 {
		t.Errorf("loss curves not restored: %+v", second.Losses)
	}
	dir := writeReport(t, second)
	for _, name := range []string{"relerr_vs_t.png", "samples.png", "loss.png", "losses.csv"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDrawQTIsSeededAndHasTheKernelsSpread(t *testing.T) {
	s := schedule.DefaultVE()
	data := mat.NewDense(1, 2, []float64{1, -1})
	a := DrawQT(data, s, 0.5, 4000, 3)
	b := DrawQT(data, s, 0.5, 4000, 3)
	if !mat.Equal(a, b) {
		t.Fatal("same seed, different points")
	}
	sig := s.Sigma(0.5)
	var m, v float64
	for i := 0; i < 4000; i++ {
		z := (a.At(i, 0) - 1) / sig
		m += z / 4000
		v += z * z / 4000
	}
	if math.Abs(m) > 0.1 || math.Abs(v-1) > 0.1 {
		t.Errorf("standardised mean %g, variance %g", m, v)
	}
}

func TestRelErrIsScaleFreeAndZeroForExactEstimates(t *testing.T) {
	ref := []float64{1, -2, 3}
	if e := RelErr(ref, ref); e != 0 {
		t.Errorf("exact estimate: %g", e)
	}
	est := []float64{1.1, -2.2, 3.3}
	big := []float64{10, -20, 30}
	bigEst := []float64{11, -22, 33}
	if math.Abs(RelErr(est, ref)-0.1) > 1e-12 || math.Abs(RelErr(bigEst, big)-0.1) > 1e-12 {
		t.Errorf("relative errors %g, %g, want 0.1", RelErr(est, ref), RelErr(bigEst, big))
	}
}

func TestConfigRejectsEmptySettings(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"no times":       func(c *Config) { c.Times = nil },
		"no eval seeds":  func(c *Config) { c.EvalSeeds = nil },
		"one curve time": func(c *Config) { c.CurveTimes = 1 },
		"no train seeds": func(c *Config) { c.TrainSeeds = nil },
		"bad data set":   func(c *Config) { c.Dataset = "spiral" },
	} {
		c := tiny(true)
		mod(&c)
		if _, err := Run(context.Background(), c, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
