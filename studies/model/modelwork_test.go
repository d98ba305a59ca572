package model

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/mnist"
)

// testSettings are the likelihood settings of the tests: 5 images in
// batches of 2 (the last batch holds one).
var testSettings = likelihoodSettings{Network: "eps", Images: 5, Batch: 2, RTol: 1e-2, Probes: 1, Seed: 1, Trace: "skip+hutchinson-1"}

// testBatch is batch b of testSettings with values that say which it is.
func testBatch(b int) batchWork {
	w := batchWork{Batch: b, NFE: 100 + b}
	for i := range testSettings.size(b) {
		w.BPD = append(w.BPD, float64(b)+0.1*float64(i))
		w.Coarse = append(w.Coarse, float64(b)+0.1*float64(i)+0.01)
	}
	return w
}

func openTestLikelihood(t *testing.T, dir, shard string, want likelihoodSettings, digest string) (*likelihoodKept, error) {
	t.Helper()
	return openLikelihood(ModelEvalConfig{Work: dir, Shard: shard}, want, digest, "Go Backend")
}

// mustOpen opens the likelihood kept in dir for testSettings on network
// "abc" (shard "": the whole run).
func mustOpen(t *testing.T, dir, shard string) *likelihoodKept {
	t.Helper()
	k, err := openTestLikelihood(t, dir, shard, testSettings, "abc")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// batchesOf lists the batches k holds.
func batchesOf(t *testing.T, k *likelihoodKept) []int {
	t.Helper()
	var got []int
	for b := range testSettings.batches() {
		w, found, err := k.batch(b)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			if fmt.Sprint(w) != fmt.Sprint(testBatch(b)) {
				t.Errorf("batch %d came back as %+v, want %+v", b, w, testBatch(b))
			}
			got = append(got, b)
		}
	}
	return got
}

// A batch kept comes back in a later run (the run resumes at the others);
// a folder made for other settings or another network, a batch of another
// size and a malformed file are refused as ErrWork.
func TestLikelihoodWorkResumesAndRefusesOtherWork(t *testing.T) {
	dir := t.TempDir()
	k := mustOpen(t, dir, "")
	for _, b := range []int{0, 2} {
		if err := k.keep(testBatch(b)); err != nil {
			t.Fatal(err)
		}
	}
	again := mustOpen(t, dir, "")
	if got := batchesOf(t, again); fmt.Sprint(got) != "[0 2]" {
		t.Errorf("a resumed run finds batches %v, want [0 2]", got)
	}
	if w, s := again.where(); !strings.Contains(w, "Go Backend") || s <= 0 {
		t.Errorf("the kept likelihood was computed on %q in %g s", w, s)
	}
	other := testSettings
	other.RTol *= 2
	if _, err := openTestLikelihood(t, dir, "", other, "abc"); !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), likelihoodStem) {
		t.Errorf("a folder made at another rtol: %v", err)
	}
	if _, err := openTestLikelihood(t, dir, "", testSettings, "xyz"); !errors.Is(err, ErrWork) {
		t.Errorf("a folder made with another network: %v", err)
	}
	short := testBatch(1)
	short.BPD = short.BPD[:1]
	bad := t.TempDir()
	if err := mustOpen(t, bad, "").keep(short); err != nil {
		t.Fatal(err)
	}
	if _, err := openTestLikelihood(t, bad, "", testSettings, "abc"); !errors.Is(err, ErrWork) {
		t.Errorf("a batch of one image where two belong: %v", err)
	}
	path := filepath.Join(dir, likelihoodStem+".json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckModelWork(ModelEvalConfig{Work: dir}); !errors.Is(err, ErrWork) {
		t.Errorf("CheckModelWork of a truncated %s: %v", path, err)
	}
}

// Shards keep their batches each in their own file (batch b is shard
// b mod n + 1's); the whole run reads the union.
func TestLikelihoodWorkShards(t *testing.T) {
	dir := t.TempDir()
	for _, shard := range []string{"1/2", "2/2"} {
		k := mustOpen(t, dir, shard)
		for b := range testSettings.batches() {
			if k.Mine() {
				if err := k.keep(testBatch(b)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := batchesOf(t, k); shard == "1/2" && fmt.Sprint(got) != "[0 2]" {
			t.Errorf("shard 1/2 holds batches %v, want [0 2]", got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, likelihoodStem+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shard wrote the whole run's file: %v", err)
	}
	if got := batchesOf(t, mustOpen(t, dir, "")); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("the whole run finds batches %v, want [0 1 2]", got)
	}
	if err := CheckModelWork(ModelEvalConfig{Work: dir, Shard: "1/2"}); err != nil {
		t.Errorf("CheckModelWork of shard 1/2: %v", err)
	}
	for _, c := range []ModelEvalConfig{{Shard: "1/2"}, {Work: dir, Shard: "3/2"}, {Work: dir, Shard: "1/2", Parts: map[string]bool{PartSamples: true}}} {
		if err := c.checkShard(); err == nil {
			t.Errorf("shard %q, work %q, parts %v accepted", c.Shard, c.Work, c.Parts)
		}
	}
}

// legacyLikelihoodJSON is likelihood.json as an earlier dfx wrote it for
// testSettings on network "abc": batches 0 and 1 of 3, with the seed given.
func legacyLikelihoodJSON(seed int) string {
	return fmt.Sprintf(`{
 "network": "eps", "digest": "abc", "images": 5, "batch": 2, "rtol": 0.01, "probes": 1, "seed": %d, "trace": "skip+hutchinson-1",
 "bpd": [0, 0.1, 1, 1.1], "coarse": [0.01, 0.11, 1.01, 1.11], "nfe": [100, 101],
 "machine": "old/box, 8 CPUs", "backend": "xla:cuda", "seconds": 12.5
}`, seed)
}

// A folder an earlier dfx wrote is read: likelihood.json's batches are
// found and the run computes only the others, into its store, leaving the
// file as it was; a likelihood.json or samples_s<scale>.json made for other
// settings, or malformed, is refused.
func TestLegacyLikelihoodWorkIsRead(t *testing.T) {
	dir := t.TempDir()
	legacy := filepath.Join(dir, legacyLikelihoodFile)
	if err := os.WriteFile(legacy, []byte(legacyLikelihoodJSON(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckModelWork(ModelEvalConfig{Work: dir}); err != nil {
		t.Fatal(err)
	}
	k := mustOpen(t, dir, "")
	if got := batchesOf(t, k); fmt.Sprint(got) != "[0 1]" {
		t.Errorf("likelihood.json gives batches %v, want [0 1]", got)
	}
	if err := k.keep(testBatch(2)); err != nil {
		t.Fatal(err)
	}
	again := mustOpen(t, dir, "")
	if got := batchesOf(t, again); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("the resumed legacy folder gives batches %v, want [0 1 2]", got)
	}
	if w, s := again.where(); !strings.Contains(w, "old/box") || !strings.Contains(w, "xla:cuda") || !strings.Contains(w, "Go Backend") || s < 12.5 {
		t.Errorf("the likelihood was computed on %q in %g s; want the legacy file's machine and seconds and this run's", w, s)
	}
	if raw, err := os.ReadFile(legacy); err != nil || string(raw) != legacyLikelihoodJSON(1) {
		t.Errorf("likelihood.json was changed: %s (%v)", raw, err)
	}
	for name, text := range map[string]string{"another seed": legacyLikelihoodJSON(2), "a batch and a half": strings.Replace(legacyLikelihoodJSON(1),
		`"bpd": [0, 0.1, 1, 1.1], "coarse": [0.01, 0.11, 1.01, 1.11]`, `"bpd": [0, 0.1, 1], "coarse": [0.01, 0.11, 1.01]`, 1)} {
		if err := os.WriteFile(legacy, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := openTestLikelihood(t, dir, "", testSettings, "abc"); !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), legacyLikelihoodFile) {
			t.Errorf("likelihood.json of %s: %v", name, err)
		}
	}
	if err := os.WriteFile(legacy, []byte(`{"network": "eps", "extra": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckModelWork(ModelEvalConfig{Work: dir}); !errors.Is(err, ErrWork) {
		t.Errorf("CheckModelWork of a malformed likelihood.json: %v", err)
	}
}

// Samples described by an earlier dfx's samples_s<scale>.json are read;
// described for other settings, or not described at all, they are refused;
// samples the run draws are described in its store, and a file changed
// since is refused.
func TestSamplesWork(t *testing.T) {
	dir := t.TempDir()
	want := samplesSettings{Network: "eps", PerClass: 1, Steps: 2, Seed: 1}
	open := func() *samplesKept {
		k, err := openSamples(dir, want, "abc", "Go Backend")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	x := mat.NewDense(10, mnist.Dim, nil)
	x.Apply(func(i, _ int, _ float64) float64 { return float64(i)/10 - 0.5 }, x)
	if x8, err := eightBit(x); err != nil {
		t.Fatal(err)
	} else {
		x = x8
	}
	if err := mnist.WriteImagesIDX(filepath.Join(dir, samplesFile(2)), x); err != nil {
		t.Fatal(err)
	}
	if _, err := open().load(2); !errors.Is(err, ErrWork) {
		t.Errorf("samples without a description: %v", err)
	}
	info := filepath.Join(dir, legacySamplesFile(2))
	legacy := func(steps int) string {
		return fmt.Sprintf(`{"network": "eps", "digest": "abc", "scale": 2, "per_class": 1, "steps": %d, "seed": 1, "machine": "old/box"}`, steps)
	}
	if err := os.WriteFile(info, []byte(legacy(2)), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := open().load(2); err != nil || got == nil || !mat.Equal(got, x) {
		t.Errorf("samples described by samples_s2.json: %v", err)
	}
	if err := os.WriteFile(info, []byte(legacy(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := open().load(2); !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), "samples_s2.json") {
		t.Errorf("samples_s2.json of other steps: %v", err)
	}
	if err := CheckModelWork(ModelEvalConfig{Work: dir}); err != nil {
		t.Fatal(err)
	}
	if err := open().save(1, x); err != nil {
		t.Fatal(err)
	}
	if got, err := open().load(1); err != nil || got == nil || !mat.Equal(got, x) {
		t.Errorf("samples kept in the store: %v", err)
	}
	if _, err := openSamples(dir, samplesSettings{Network: "eps", PerClass: 1, Steps: 2, Seed: 2}, "abc", "Go Backend"); !errors.Is(err, ErrWork) {
		t.Errorf("samples kept for another seed: %v", err)
	}
	path := filepath.Join(dir, samplesFile(1))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(bytes.Clone(raw[:len(raw)-1]), raw[len(raw)-1]^1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := open().load(1); !errors.Is(err, ErrWork) {
		t.Errorf("samples changed since they were described: %v", err)
	}
	if got, err := open().load(5); err != nil || got != nil {
		t.Errorf("samples of a scale not kept: %v, %v", got, err)
	}
}
