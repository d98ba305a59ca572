package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/mnist"
	"gonum.org/v1/gonum/mat"
)

// TestModelEvalQuick: the quick evaluation of the committed ε-network gives
// a finite test bpd in the range the README states for it (≈ 2.8), below
// its skip mixture's exact bpd on the same images, a solver error, and
// samples measured against the requested digits.
func TestModelEvalQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the committed networks (≈ 30 s)")
	}
	res, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, ModelEvalQuick(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.BPD) != 4 || len(res.Coarse) != 4 || len(res.Mixture) != 4 {
		t.Fatalf("%d bpd, %d coarse, mixture %v", len(res.BPD), len(res.Coarse), res.Mixture)
	}
	gain := 0.0
	for i, b := range res.BPD {
		if !(b > 1 && b < 5) {
			t.Errorf("committed ε-network: %g bpd, want ≈ 2.8", b)
		}
		gain += (res.Mixture[i] - b) / 4
	}
	if !(gain > 0.1) {
		t.Errorf("network %v, its mixture %v: mean gain %g bpd, want > 0.1 (≈ 0.5 measured)", res.BPD, res.Mixture, gain)
	}
	if len(res.Quality) != 2 || math.IsNaN(res.Quality[0].Q.ClassifierAgree) || res.Quality[0].Q.N != 20 || res.Quality[1].Q.N != 20 { // the network and its skip mixture
		t.Errorf("quality %+v", res.Quality)
	}
	if _, err := res.Report(); err != nil {
		t.Fatal(err)
	}
}

// TestModelEvalWorkFolder: the likelihood and the samples kept in a work
// folder are read back instead of recomputed (the same numbers), a run
// resumes at the batches not kept, a run with other settings refuses the
// folder, and a run of some parts only computes those.
func TestModelEvalWorkFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the committed networks")
	}
	work := t.TempDir()
	cfg := ModelEvalQuick()
	cfg.Images, cfg.Batch, cfg.PerClass, cfg.Steps = 2, 1, 1, 2 // batches of one image: the file can stop after the first
	cfg.Work, cfg.Parts = work, map[string]bool{PartLikelihood: true, PartSamples: true}
	first, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.BPD) != 2 || len(first.Quality) != 2 || !math.IsNaN(first.Quality[0].Q.FD) {
		t.Fatalf("parts likelihood, samples: %d bpd, quality %+v", len(first.BPD), first.Quality)
	}
	likelihoodFile := filepath.Join(work, likelihoodStem+".json")
	for _, f := range []string{likelihoodFile, filepath.Join(work, "samples_s1.idx"), filepath.Join(work, samplesStem+".json")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	// read back, not recomputed: a value changed in the file comes back, and
	// a batch taken out of it is computed again (a resumed run)
	plantBatch(t, likelihoodFile, batchWork{Batch: 0, BPD: []float64{1.25}, Coarse: []float64{1.5}, NFE: first.NFE})
	// samples read back, not redrawn: blank images planted in their place
	for _, f := range []string{"samples_s1.idx", samplesStem + ".json"} {
		if err := os.Remove(filepath.Join(work, f)); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := openSamples(work, samplesSettings{Network: "eps", PerClass: cfg.PerClass, Steps: cfg.Steps, Seed: cfg.Seed}, first.digest, "Go")
	if err != nil {
		t.Fatal(err)
	}
	blank := mat.NewDense(10*cfg.PerClass, mnist.Dim, nil)
	blank.Apply(func(int, int, float64) float64 { return -1 }, blank)
	if err := kept.save(1, blank); err != nil {
		t.Fatal(err)
	}
	again := cfg
	again.Parts = nil
	var log bytes.Buffer
	second, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, again, &log)
	if err != nil {
		t.Fatal(err)
	}
	if second.BPD[0] != 1.25 || second.Coarse[0] != 1.5 || second.BPD[1] != first.BPD[1] || second.Coarse[1] != first.Coarse[1] {
		t.Errorf("resumed likelihood %v, %v; want [1.25 %g], [1.5 %g]", second.BPD, second.Coarse, first.BPD[1], first.Coarse[1])
	}
	if !strings.Contains(log.String(), "2/2 images") || strings.Contains(log.String(), "1/2 images") {
		t.Errorf("the resumed run did not compute the second batch alone:\n%s", log.String())
	}
	raw, err := os.ReadFile(likelihoodFile)
	if err != nil || strings.Count(string(raw), mnist.Machine()) != 1 {
		t.Errorf("the resumed likelihood names this machine other than once: %s", raw)
	}
	if q := second.Quality[0].Q; math.IsNaN(q.ClassifierAgree) || q.FrameRMS != 0 || first.Quality[0].Q.FrameRMS == 0 {
		t.Errorf("planted blank samples read back with frame rms %g (drawn: %g)", q.FrameRMS, first.Quality[0].Q.FrameRMS)
	}
	quality := cfg
	quality.Parts = map[string]bool{PartQuality: true}
	if _, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, quality, io.Discard); err != nil {
		t.Errorf("quality alone on kept samples: %v", err)
	}
	quality.Work = t.TempDir()
	if _, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, quality, io.Discard); err == nil {
		t.Error("quality alone without samples was accepted")
	}
	seed := cfg
	seed.Seed++
	seed.Parts = map[string]bool{PartSamples: true}
	_, err = RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, seed, io.Discard)
	if !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), samplesStem) {
		t.Errorf("samples kept for another seed: %v", err)
	}
	other := cfg
	other.RTol = 2 * cfg.RTol
	_, err = RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, other, io.Discard)
	if !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), likelihoodStem) {
		t.Errorf("a work folder made at another rtol: %v", err)
	}
	if err := os.WriteFile(likelihoodFile, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, cfg, io.Discard); !errors.Is(err, ErrWork) {
		t.Errorf("a truncated %s: %v", likelihoodFile, err)
	}
	shardsReadTogether(t, cfg, first)
}

// plantBatch rewrites the work file path with w as its only row.
func plantBatch(t *testing.T, path string, w batchWork) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	row, err := json.Marshal([]map[string]any{{"key": batchKey(w.Batch), "value": w}})
	if err != nil {
		t.Fatal(err)
	}
	f["rows"] = row
	if raw, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shardsReadTogether: shards 1/2 and 2/2 each compute their batch into
// their own file (shard 2, run after shard 1, reads shard 1's too), and
// the run without a shard reads both, computing none, with the numbers of
// the run without shards (first).
func shardsReadTogether(t *testing.T, cfg ModelEvalConfig, first *ModelEvalResult) {
	cfg.Work, cfg.Parts = t.TempDir(), map[string]bool{PartLikelihood: true}
	for k, shard := range []string{"1/2", "2/2"} {
		c := cfg
		c.Shard = shard
		res, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, c, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if res.Batches != k+1 || len(res.BPD) != k+1 {
			t.Errorf("shard %s holds %d batches (%v), want %d", shard, res.Batches, res.BPD, k+1)
		}
		file, _ := c.ShardFile()
		raw, err := os.ReadFile(filepath.Join(cfg.Work, file))
		if err != nil || strings.Count(string(raw), `"key"`) != 1 || !strings.Contains(string(raw), batchKey(k)) {
			t.Errorf("shard %s's file holds other rows than %s (%v): %s", shard, batchKey(k), err, raw)
		}
		if _, err := res.Report(); err == nil {
			t.Errorf("shard %s wrote a report of its partial result", shard)
		}
	}
	var log bytes.Buffer
	all, err := RunModelEval(context.Background(), mnist.Problem(), mnist.Lab{}, cfg, &log)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(all.BPD, all.Coarse, all.NFE) != fmt.Sprint(first.BPD, first.Coarse, first.NFE) || strings.Contains(log.String(), "/2 images") {
		t.Errorf("the shards' union: %v %v %d, want the whole run's %v %v %d; log:\n%s",
			all.BPD, all.Coarse, all.NFE, first.BPD, first.Coarse, first.NFE, log.String())
	}
}
