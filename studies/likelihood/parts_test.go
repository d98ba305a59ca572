package likelihood

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/models/onnximport"
)

// The study runs the parts it is asked for on an imported network with t_θ
// alone: Table 1 and the exact-Fisher part leave out ν_θ's rows, the
// report holds those parts' tables and figures only, and the parts that
// need classes are refused on an unconditional network.
func TestStudyPartsOnAnImportedNetworkWithoutNu(t *testing.T) {
	_, data, nets := importedProblem(t)
	if err := os.Remove(filepath.Join(nets, onnximport.CentredTraceFile)); err != nil {
		t.Fatal(err)
	}
	p, err := onnximport.NewProblem(*data)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := ParseParts("timing, truth")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "parts", Data: "points", Seed: 1, TimingRounds: 1, TimingBatches: []int{1}, TruthTimes: []float64{0.3}, TruthQueries: 2,
		Parts: parts}
	ctx := context.Background()
	res, err := Run(ctx, p, nets, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Timing == nil || res.Truth == nil || res.BPD != nil || res.Guidance != nil || res.Fig2 != nil || res.Traj != nil {
		t.Fatal("Run computed other parts than timing and truth")
	}
	if res.Timing.Get("df-tm", 1) == nil || res.Timing.Get("df-tm-c", 1) != nil {
		t.Error("Table 1 without ν_θ: want a df-tm row and no df-tm-c row")
	}
	if strings.Join(res.Truth.Estimators, " ") != "vjp-exact hutchinson-16 df-tm" {
		t.Errorf("exact-Fisher estimators %v, want the exact VJP trace, Hutchinson-16 and DF-TM", res.Truth.Estimators)
	}
	rep, err := res.Report()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range rep.Tables {
		names = append(names, tb.Name)
	}
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "training table1 truth fig1a_loss.png truth_relerr.png truth_cov.png" {
		t.Errorf("report of timing and truth: %s", got)
	}
	if md := rep.Tables[1].Markdown(); !strings.Contains(md, "`dfx reproduce parts -parts timing,truth`") {
		t.Errorf("Table 1 of two parts does not say which it ran:\n%s", md)
	}
	for _, refused := range []string{PartGuidance, PartFig2} {
		cfg.Parts = map[string]bool{refused: true}
		if _, err := Run(ctx, p, nets, cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "class-conditional") {
			t.Errorf("part %s on an unconditional network: %v, want a refusal", refused, err)
		}
	}
	if _, err := ParseParts("timing,bogus"); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("ParseParts of an unknown part: %v", err)
	}
}
