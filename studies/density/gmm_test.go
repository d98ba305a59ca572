package density

import (
	"context"
	"math"
	"strings"
	"testing"
)

// The quick study runs end to end: with the exact model every feasible
// quantile level is hit to a small fraction of the quantiles' spread, ℓ
// tracks the exact log q, and the report renders.
func TestDensityStudyExactHitsItsLevels(t *testing.T) {
	cfg := GMMQuick()
	res, err := RunGMM(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range cfg.Dims {
		q := res.Quantiles[d]
		last := q.Values[len(q.Values)-1]
		spread := last[len(last)-1] - last[0]
		for _, w := range res.Rows {
			if w.Dim != d {
				continue
			}
			t.Logf("d=%d %-14s %-10s level %8.3f achieved %8.3f ± %.3f |miss| %.3f tracked %.3g at-mode %d limited %.3f %v", d, w.Method, w.Target, w.Level, w.Achieved.Mean, w.Achieved.SE, w.AbsMiss.Mean, w.Tracked.Mean, w.AtMode, w.Limited, w.PerSample)
			if w.Method != MethodExact {
				continue
			}
			if w.Tracked.Mean > 0.01 {
				t.Errorf("d=%d %s: exact ℓ off log q by %.3g", d, w.Target, w.Tracked.Mean)
			}
			if strings.HasPrefix(w.Target, "q=") && !strings.Contains(w.Target, "until") && w.AtMode == 0 && !(w.AbsMiss.Mean < 0.05*spread) {
				t.Errorf("d=%d %s: exact guidance missed its level by %.3g (spread %.3g)", d, w.Target, w.AbsMiss.Mean, spread)
			}
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
			t.Fatal(err)
		}
	}
	if md := rep.Tables[0].Markdown(); strings.Contains(md, "NaN") || math.IsNaN(res.Rows[0].Achieved.Mean) {
		t.Errorf("NaN in the density report:\n%s", md)
	}
}
