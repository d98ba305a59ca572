package ot

import (
	"context"
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
