package likelihood

import (
	"encoding/csv"
	"os"
	"strconv"
	"testing"
)

// TestFig1bLabelsFromTheFullRun draws Figure 1b from the committed full
// run's guidance.csv (13 scales, crowded at the lower left), the case
// where the scale labels overlapped.
func TestFig1bLabelsFromTheFullRun(t *testing.T) {
	f, err := os.Open("../../figures/mnist/guidance.csv")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	r := &Result{Guidance: &GuidanceResult{}}
	r.Config.BPDSteps = 10
	for _, rec := range recs[1:] {
		r.Guidance.Rows = append(r.Guidance.Rows, GuidanceRow{Scale: num(rec[0]), LogProb: num(rec[2]), LogProbSE: num(rec[3]),
			PaperBPD: num(rec[5]), PaperSE: num(rec[6]), ConvBPD: num(rec[7]), ConvSE: num(rec[8])})
	}
	b, err := r.guidanceFigure("png")
	if err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("DFX_FIG1B_PNG"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
