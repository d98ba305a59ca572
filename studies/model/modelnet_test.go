package model

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/mnist"
)

// importedUNet is the committed MNIST U-Net of scripts/mnist-unet.py,
// imported by dfx import: an unconditional network without a skip.
var importedUNet = filepath.Join("..", "..", "examples", "mnist-unet", "unet.dfxckpt")

// An imported network's test likelihood: its bpd with the solver error,
// beside the committed ε-network's skip mixture on the same images (it has
// no skip of its own); its class-conditional samples are refused, as is a
// checkpoint that is not an ε-network for MNIST.
func TestModelEvalOfAnImportedNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the committed U-Net (≈ 20 s)")
	}
	cfg := ModelEvalQuick()
	cfg.Checkpoint, cfg.Images, cfg.RTol, cfg.Parts = importedUNet, 1, 0.05, map[string]bool{PartLikelihood: true}
	if err := checkEvalCheckpoint(cfg); err != nil {
		t.Fatal(err)
	}
	res, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.BPD) != 1 || len(res.Coarse) != 1 || len(res.Mixture) != 1 {
		t.Fatalf("%d bpd, %d coarse, %d of the reference mixture, want 1 each", len(res.BPD), len(res.Coarse), len(res.Mixture))
	}
	if b := res.BPD[0]; !(b > 0.5 && b < 4) || math.IsNaN(res.Coarse[0]) {
		t.Errorf("the U-Net: %g bpd (coarse %g), want ≈ 1.9 (measured on 200 images)", b, res.Coarse[0])
	}
	rep, err := res.Report()
	if err != nil {
		t.Fatal(err)
	}
	md := rep.Tables[0].Markdown()
	for _, want := range []string{"ε-network unet.dfxckpt", "the skip mixture of the ε-network eps (exact)", "imported from the ONNX file unet.onnx"} {
		if !strings.Contains(md, want) {
			t.Errorf("the likelihood table does not say %q:\n%s", want, md)
		}
	}
	cfg.Parts = nil
	if err := checkEvalCheckpoint(cfg); err == nil || !strings.Contains(err.Error(), "unconditional") {
		t.Errorf("samples of an unconditional network: %v, want a refusal", err)
	}
	cfg.Parts = map[string]bool{PartLikelihood: true}
	for _, bad := range []string{filepath.Join("..", "..", "mnist", "checkpoints", "classifier.dfxckpt"), importedUNet + ".missing"} {
		cfg.Checkpoint = bad
		if err := checkEvalCheckpoint(cfg); err == nil {
			t.Errorf("checkpoint %s: accepted", bad)
		}
	}
}
