package access

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
)

func TestFieldsReportAndTraceStaysBelowBound(t *testing.T) {
	cfg := FieldsQuick()
	cfg.Grid, cfg.Arrows = 24, 6
	r, err := RunFields(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Summaries() {
		if s.MaxTrace > s.IsotropicBound*(1+1e-12) {
			t.Errorf("t=%g: max tr F %g above d/σ² = %g", s.T, s.MaxTrace, s.IsotropicBound)
		}
	}
	// Between the ring's modes at small σ the density is not log-concave.
	if s := r.Summaries()[0]; s.NegativeFraction == 0 {
		t.Errorf("t=%g: expected regions with tr F < 0", s.T)
	}
	dir := writeReport(t, r)
	for _, f := range []string{"trace.png", "trace.svg", "score.png", "summary.md", "summary.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	if b, err := r.TracePNG(); err != nil || len(b) < 1000 {
		t.Errorf("TracePNG: %d bytes, %v", len(b), err)
	}
}

func TestBadFieldsConfigIsAnError(t *testing.T) {
	for _, mod := range []func(*FieldsConfig){
		func(c *FieldsConfig) { c.Grid = 1 },
		func(c *FieldsConfig) { c.Times = nil },
		func(c *FieldsConfig) { c.Schedule = "nope" },
		func(c *FieldsConfig) { c.Times = []float64{1e9} },
		func(c *FieldsConfig) { c.Extent = -1 },
	} {
		c := FieldsQuick()
		mod(&c)
		if _, err := RunFields(context.Background(), c); err == nil {
			t.Errorf("bad config accepted: %+v", c)
		}
	}
}

// The registry runs the same experiment as the package function: the
// quick profile through report.Lookup writes the same summary.
func TestFieldsRunsThroughTheRegistry(t *testing.T) {
	e, ok := report.Lookup("fields")
	if !ok || e.Doc == "" || e.Standalone {
		t.Fatalf("fields: registered %v, %+v", ok, e)
	}
	r, err := e.Configure(report.Quick, nil).Run(context.Background(), report.Env{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rs := report.Split(r)
	direct, err := RunFields(context.Background(), FieldsQuick())
	if err != nil {
		t.Fatal(err)
	}
	a, b := rs[0].(*FieldsResult).Summaries(), direct.Summaries()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d summaries through the registry, %d direct", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("summary %d: registry %+v, direct %+v", i, a[i], b[i])
		}
	}
}
