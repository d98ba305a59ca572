package model

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestCandidatesReadATrainedCandidate: a candidate ε-network trained into
// a folder (a tiny eps-gmm-mlp, 6 steps, validated at the start and the
// end) is found there by its spec name with its validation, and its report
// has one row, describing the trunk and skip as trained (not the
// registry's), and a figure that renders.
func TestCandidatesReadATrainedCandidate(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the MNIST training set and fits a mixture")
	}
	spec, err := mnist.SpecByName("eps-gmm-mlp")
	if err != nil {
		t.Fatal(err)
	}
	spec.Params = maps.Clone(spec.Params)
	spec.Params["/score/"+models.ParamWidth] = 16
	spec.Params["/score/"+models.ParamDepth] = 1
	spec.Params[models.ParamBatchSize] = 8
	spec.Skip = &mixture.FitOptions{Components: 1, PerClass: true, Rank: 4, Shrink: 0.2, Idle: 1e-4, Seed: 1}
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := mnist.TrainNetwork(context.Background(), backend, spec, mnist.TrainOptions{Steps: 6, Out: dir, LogEvery: 1, ValEvery: 6}); err != nil {
		t.Fatal(err)
	}
	cand, err := ReadCandidates(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cand.Runs) != 1 || !cand.Runs[0].Finished || cand.Runs[0].Steps != 6 || len(cand.Runs[0].Record.Val) != 2 {
		t.Fatalf("candidates read back %+v", cand.Runs)
	}
	rep, err := cand.Report()
	if err != nil || len(rep.Figures) != 1 || len(rep.Tables[0].Cells) != 1 {
		t.Fatalf("candidates report %v, %v", rep, err)
	}
	if md := rep.Tables[0].Markdown(); !strings.Contains(md, "| mixture 1/class, rank 4 | mlp 16×1 |") {
		t.Errorf("the candidate's skip and trunk are not those trained:\n%s", md)
	}
	if _, err := rep.Figures[0].Render("png"); err != nil {
		t.Error(err)
	}
}
