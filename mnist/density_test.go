package mnist

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
)

// The quick experiment runs end to end on the committed networks and a
// small fitted mixture: the exact mixture's tracked ℓ is its closed-form
// log q at the end (the guidance formula holds at d = 784), every bpd is
// finite, and the report renders.
func TestDensityExperimentQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and the networks")
	}
	res, err := RunDensityExp(context.Background(), DensityExpQuick(""), io.Discard)
	if err != nil {
		t.Fatal(err)
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
