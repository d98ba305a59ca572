package plotx

import (
	"image/color"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

func TestTickersLabelAtLeastFourValues(t *testing.T) {
	for _, r := range [][2]float64{{-3.5, 3.5}, {0, 1}, {0.1, 0.6}, {-2, 1}, {0.002, 80}, {-5657, 200}, {1e-7, 2e-7}, {0.999, 1}, {3, 3.0001}, {-1e9, 1e9}} {
		if n := labelCount(Ticks{}, r[0], r[1]); n < minTicks {
			t.Errorf("Ticks on [%g, %g]: %d labels, want ≥ %d", r[0], r[1], n, minTicks)
		}
	}
	for _, r := range [][2]float64{{1e-16, 10}, {0.02, 0.5}, {0.3, 0.9}, {0.3, 0.35}, {1, 1000}, {0.05, 0.12}} {
		if n := labelCount(logTicks{}, r[0], r[1]); n < minTicks {
			t.Errorf("logTicks on [%g, %g]: %d labels, want ≥ %d", r[0], r[1], n, minTicks)
		}
	}
}

func TestTickLabelsAreDistinctAndRound(t *testing.T) {
	seen := map[string]bool{}
	for _, tk := range (Ticks{}).Ticks(0.1, 0.6) {
		if tk.Label == "" {
			continue
		}
		if seen[tk.Label] || len(tk.Label) > 5 {
			t.Errorf("label %q repeated or not rounded", tk.Label)
		}
		seen[tk.Label] = true
	}
}

// field from lo to hi along x.
func ramp(lo, hi float64) (xs, ys []float64, z [][]float64) {
	xs, ys = []float64{0, 1, 2, 3, 4}, []float64{0, 1, 2}
	for range ys {
		row := make([]float64, len(xs))
		for i := range row {
			row[i] = lo + (hi-lo)*float64(i)/float64(len(xs)-1)
		}
		z = append(z, row)
	}
	return xs, ys, z
}

func TestHeatMapMarksWhatItClips(t *testing.T) {
	xs, ys, z := ramp(-8, 3)
	_, bar, err := heatMap("clipped", xs, ys, z, HeatOptions{Min: -2, Max: 1, ColorBarLabel: "v"})
	if err != nil {
		t.Fatal(err)
	}
	if bar.under == nil || bar.over == nil {
		t.Fatalf("range [−2, 1] over data [−8, 3]: under %v over %v, want both ends marked", bar.under, bar.over)
	}
	if !strings.Contains(bar.underText, "-8") || !strings.Contains(bar.overText, "3") {
		t.Errorf("clip texts %q, %q: want the data's extremes −8 and 3", bar.underText, bar.overText)
	}
	if !strings.Contains(bar.label, "clipped") {
		t.Errorf("colour-bar label %q does not say it is clipped", bar.label)
	}
	_, bar, err = heatMap("covered", xs, ys, z, HeatOptions{Min: -10, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	if bar.under != nil || bar.over != nil || strings.Contains(bar.label, "clipped") {
		t.Errorf("range covering the data marked as clipped: %+v", bar)
	}
}

func TestHeatMapPaintsClippedCellsInTheSaturationColour(t *testing.T) {
	xs, ys, z := ramp(-8, 3)
	p, err := HeatMap("", xs, ys, z, HeatOptions{Min: -2, Max: 1, NoColorBar: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bytes(p, 300, 200, "png")
	if err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, b)
	dc := p.DataCanvas(drawCanvas(vg.Rectangle{Max: vg.Point{X: 300, Y: 200}}))
	// the leftmost column (−8) is under, the rightmost (3) over; image y runs down
	px := func(x vg.Length) color.Color {
		y := 200 - (dc.Min.Y+dc.Max.Y)/2
		return img.At(int(x*96/72), int(y*96/72))
	}
	same := func(a, b color.Color) bool {
		r1, g1, b1, _ := a.RGBA()
		r2, g2, b2, _ := b.RGBA()
		return r1>>8 == r2>>8 && g1>>8 == g2>>8 && b1>>8 == b2>>8
	}
	if c := px(dc.Min.X + 3); !same(c, DefaultUnderColor) {
		t.Errorf("cell below Min is %v, want the under colour", c)
	}
	if c := px(dc.Max.X - 3); !same(c, DefaultOverColor) {
		t.Errorf("cell above Max is %v, want the over colour", c)
	}
}

func TestHeatMapSymLogCoversTheDataAndLabelsDataUnits(t *testing.T) {
	xs, ys, z := ramp(-5000, 1)
	_, bar, err := heatMap("symlog", xs, ys, z, HeatOptions{SymLog: 1})
	if err != nil {
		t.Fatal(err)
	}
	if bar.under != nil || bar.over != nil {
		t.Fatal("SymLog over the data range clipped")
	}
	labels := map[string]bool{}
	for _, tk := range bar.labelled() {
		labels[tk.Label] = true
	}
	for _, want := range []string{"-1e+03", "-10", "0", "1"} {
		if !labels[want] {
			t.Errorf("SymLog colour bar lacks the label %q (has %v)", want, labels)
		}
	}
	if len(bar.labelled()) < minTicks {
		t.Errorf("%d colour-bar labels, want ≥ %d", len(bar.labelled()), minTicks)
	}
	if _, err := HeatMap("", xs, ys, z, HeatOptions{SymLog: 1, LogZ: true}); err == nil {
		t.Error("SymLog with LogZ: want an error")
	}
}

func TestColourBarHasFourLabelsOnNarrowRanges(t *testing.T) {
	for _, r := range [][2]float64{{0.1, 0.9}, {-2, 1}, {-30, 1}} {
		xs, ys, z := ramp(r[0], r[1])
		_, bar, err := heatMap("", xs, ys, z)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(bar.labelled()); n < minTicks {
			t.Errorf("data [%g, %g]: %d colour-bar labels, want ≥ %d", r[0], r[1], n, minTicks)
		}
	}
}

func TestLegendOutsideLeavesTheDataAreaFree(t *testing.T) {
	mk := func(outside bool) (*plot.Plot, vg.Length) {
		p, err := Lines("", "x", "y", Series{Name: "a long legend entry", X: []float64{0, 1}, Y: []float64{0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if !outside { // undo: put a fresh legend back inside
			p = plot.New()
		}
		dc := p.DataCanvas(drawCanvas(vg.Rectangle{Max: vg.Point{X: 300, Y: 200}}))
		return p, dc.Max.X
	}
	_, in := mk(false)
	p, out := mk(true)
	if !(out < in-20) {
		t.Fatalf("data area right edge %v with the legend outside, %v without: no room reserved", out, in)
	}
	if r := p.Legend.Rectangle(drawCanvas(vg.Rectangle{Max: vg.Point{X: 300, Y: 200}})); r.Max.X-r.Min.X > 0 {
		t.Fatal("the plot's own legend (drawn inside) still has entries")
	}
	if _, err := Bytes(p, 300, 200, "png"); err != nil {
		t.Fatal(err)
	}
}

// TestLogTicksLeaveNoLongStretchUnlabelled: on a log axis of about one
// decade (adjoint-gmm-agreement.png had 1.1–15.5 labelled only at 2, 3, 5
// and 10), no quarter of the axis is without a label.
func TestLogTicksLeaveNoLongStretchUnlabelled(t *testing.T) {
	for _, r := range [][2]float64{{1.1, 15.5}, {0.5, 5}, {1.05, 1000}, {60, 4.5e9}, {0.02, 0.5}, {1e-16, 10}, {2, 30}} {
		lo, hi := r[0], r[1]
		prev, gap := lo, 0.0
		for _, tk := range (logTicks{}).Ticks(lo, hi) {
			if tk.Label == "" {
				continue
			}
			gap, prev = math.Max(gap, math.Log10(tk.Value/prev)), tk.Value
		}
		gap = math.Max(gap, math.Log10(hi/prev))
		if span := math.Log10(hi / lo); gap > span/4 {
			t.Errorf("logTicks on [%g, %g]: %.2f decades unlabelled, more than a quarter of %.2f", lo, hi, gap, span)
		}
	}
}

// TestSymLogAxisKeepsNegativeValues: truth_cov.png drew negative implied
// covariances at a floor of 1e-12 on a log axis; a symmetric-log axis
// keeps their sign and order, labelled in data units.
func TestSymLogAxisKeepsNegativeValues(t *testing.T) {
	s := symLogScale{C: 1e-5}
	vals := []float64{-0.02, -0.0147, -1e-6, 0, 2e-15, 2.3e-5, 5e-4, 0.25, 0.3}
	prev := math.Inf(-1)
	for _, v := range vals {
		u := s.Normalize(-0.02, 0.3, v)
		if !(u > prev) && v != 2e-15 || u < 0 || u > 1 {
			t.Errorf("Normalize(%g) = %g after %g: not increasing in [0, 1]", v, u, prev)
		}
		prev = u
	}
	// small values stay apart from 0 (a linear axis would merge them)
	if d := s.Normalize(-0.02, 0.3, 2.3e-5) - s.Normalize(-0.02, 0.3, 0); d < 0.05 {
		t.Errorf("2.3e-5 and 0 only %.3f of the axis apart", d)
	}
	var neg, zero int
	n := 0
	var at []float64
	for _, tk := range (symLogTicks{C: 1e-5}).Ticks(-0.02, 0.3) {
		if tk.Label == "" {
			continue
		}
		u := s.Normalize(-0.02, 0.3, tk.Value)
		for _, v := range at {
			if math.Abs(u-v) < 0.04 {
				t.Errorf("label %q at %.3f of the axis crowds another at %.3f", tk.Label, u, v)
			}
		}
		at = append(at, u)
		n++
		if tk.Value < -0.02 || tk.Value > 0.3 {
			t.Errorf("tick %g outside the range", tk.Value)
		}
		if tk.Value < 0 {
			neg++
		}
		if tk.Label == "0" {
			zero++
		}
	}
	if n < minTicks || neg == 0 || zero != 1 {
		t.Errorf("%d labels, %d negative, %d zero: want ≥ %d, ≥ 1, 1", n, neg, zero, minTicks)
	}
	p, err := Lines("", "t", "y", Series{X: []float64{1, 2, 3}, Y: []float64{-0.0147, 0, 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	SymLogY(p, 1e-5)
	if _, err := Bytes(p, 300, 200, "png"); err != nil {
		t.Fatal(err)
	}
}

func TestDistinctGivesEachCurveItsOwnDashesAndGlyph(t *testing.T) {
	ss := Distinct([]Series{{Name: "a"}, {Name: "note", Note: true}, {Name: "b"}})
	if ss[1].Shape != nil || ss[1].Dashes != nil {
		t.Error("a note got a style")
	}
	if ss[0].Shape == nil || ss[2].Shape == nil || ss[0].Shape == ss[2].Shape || len(ss[0].Dashes) == len(ss[2].Dashes) || !ss[0].Points {
		t.Errorf("styles not distinct: %+v, %+v", ss[0], ss[2])
	}
}

func TestCoincidentNamesCurvesOnEachOther(t *testing.T) {
	ss := []Series{
		{Name: "a", X: []float64{1, 2}, Y: []float64{1, 2}},
		{Name: "b", X: []float64{1, 2}, Y: []float64{1.005, 2}},
		{Name: "note", Note: true},
		{Name: "c", X: []float64{1, 2}, Y: []float64{1, 2.5}},
		{Name: "d", X: []float64{1, 2}, Y: []float64{0.998, 2.001}},
		{Name: "e", X: []float64{1, 3}, Y: []float64{1, 2}},
	}
	notes := Coincident(ss, 0.01)
	if len(notes) != 1 || !notes[0].Note || notes[0].Name != "a, b and d lie on each other (|Δ| ≤ 0.005)" {
		t.Fatalf("notes %+v", notes)
	}
	if n := Coincident(ss, 0.001); len(n) != 0 {
		t.Errorf("tolerance ignored: %+v", n)
	}
	if n := Coincident(ss[:2], 1); len(n) != 1 || n[0].Name != "a and b lie on each other (|Δ| ≤ 0.005)" {
		t.Errorf("pair: %+v", n)
	}
}

func TestOffScaleCountsThePointsNotDrawn(t *testing.T) {
	if n := OffScale("df-tm", 1, 3, "down to -7.41"); !n.Note || n.Name != "df-tm: 1 of 3 points off scale (down to -7.41), not drawn" {
		t.Errorf("some points: %+v", n)
	}
	if n := OffScale("df-tm", 3, 3, "down to -7.41"); !n.Note || n.Name != "df-tm: off scale (down to -7.41), not drawn" {
		t.Errorf("every point: %+v", n)
	}
}
