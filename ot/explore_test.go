package ot

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestExploreAffineIsOTAndNonAffineIsNot(t *testing.T) {
	for _, c := range []struct {
		data string
		ot   bool
	}{{"affine", true}, {"non-affine", false}} {
		res, err := Explore(context.Background(), "vp", ExplorePaper, c.data, 8, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Summary.OT != c.ot || len(res.Rates) != 8 {
			t.Errorf("%s: OT %v with %d rates, want %v", c.data, res.Summary.OT, len(res.Rates), c.ot)
		}
		rep, err := res.Report()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rep.HTML(); err != nil {
			t.Errorf("%s: %v", c.data, err)
		}
	}
	if _, err := Explore(context.Background(), "vp", "other", "affine", 8, 1); err == nil {
		t.Error("an unknown protocol was accepted")
	}
}

// TestExploreShowsASmallFailingRate: a map that fails by a rate far below
// Table 3's 0.01 % resolution (EDM, non-affine data, the paper's Euler
// grid) shows its rates, not "0.00", beside its failing verdict.
func TestExploreShowsASmallFailingRate(t *testing.T) {
	res, err := Explore(context.Background(), "edm", ExplorePaper, "non-affine", 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary.OT || res.Summary.Asym.Mean <= 0 || res.Summary.Asym.Mean >= 1e-4 {
		t.Fatalf("EDM non-affine: OT %v, mean rate %g; want a failing map with a rate below 0.01 %%", res.Summary.OT, res.Summary.Asym.Mean)
	}
	rep, err := res.Report()
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Tables[0].Markdown()
	if strings.Contains(md, "| 0.00 ± 0.00 |") || !strings.Contains(md, fmt.Sprintf("%.3g", 100*res.Summary.Asym.Mean)) {
		t.Errorf("the mean rate %g %% is not shown with its digits:\n%s", 100*res.Summary.Asym.Mean, md)
	}
}
