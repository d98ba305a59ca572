package model

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/internal/workstore"
)

// The parts of RunModelEval that can run on another machine (a GPU) and be
// read back: the test likelihood and the samples. ModelEvalConfig.Work is
// the folder they are kept in.
const (
	PartLikelihood = "likelihood"
	PartSamples    = "samples"
	PartQuality    = "quality"
)

// ParseModelParts reads a comma-separated list of parts ("" or "all": all
// three).
func ParseModelParts(v string) (map[string]bool, error) {
	all := map[string]bool{PartLikelihood: true, PartSamples: true, PartQuality: true}
	if v == "" || v == "all" {
		return all, nil
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if !all[p] {
			return nil, fmt.Errorf("mnist-model part %q: want likelihood, samples, quality (comma-separated) or all", p)
		}
		out[p] = true
	}
	return out, nil
}

// The work folder keeps each part in an internal/workstore store made for
// the part's settings and the ε-network's digest: the likelihood in
// mnist-model-likelihood.json (a row per batch, saved after each, so that a
// run resumes where an earlier one stopped; shards keep their own files
// beside it), the samples of each scale in samples_s<scale>.idx (8-bit IDX,
// images other tools read) described by a row of mnist-model-samples.json.
// A folder an earlier dfx wrote (likelihood.json, samples_s<scale>.json) is
// read as a source of rows, never rewritten (legacywork.go).
const (
	likelihoodStem = "mnist-model-likelihood"
	samplesStem    = "mnist-model-samples"
	// modelWorkLock names the lock of a whole run's work (the samples and
	// the likelihood's own file); a shard locks its file alone.
	modelWorkLock = "mnist-model"
)

// likelihoodSettings are what the likelihood's rows are made for (the
// store's Config; the network's digest is its Networks).
type likelihoodSettings struct {
	Network string  `json:"network"`
	Images  int     `json:"images"`
	Batch   int     `json:"batch"` // images per solve: a batch's Hutchinson probes depend on the rows' places in it
	RTol    float64 `json:"rtol"`
	Probes  int     `json:"probes"`
	Seed    uint64  `json:"seed"`
	Trace   string  `json:"trace"`
}

// batches is the number of batches of the images.
func (s likelihoodSettings) batches() int { return (s.Images + s.Batch - 1) / s.Batch }

// size is the number of images of batch b (the last may be short).
func (s likelihoodSettings) size(b int) int { return min(s.Batch, s.Images-b*s.Batch) }

// batchWork is one batch's likelihood: the bpd of its images at RTol and
// at 10·RTol, and the model evaluations of its solve at RTol.
type batchWork struct {
	Batch  int       `json:"batch"`
	BPD    []float64 `json:"bpd"`
	Coarse []float64 `json:"coarse"`
	NFE    int       `json:"nfe"`
}

func batchKey(b int) string { return fmt.Sprintf("batch %04d", b) }

// check refuses a batch outside the settings' images, of another size, or
// with a non-finite bpd.
func (s likelihoodSettings) check(w batchWork) error {
	if w.Batch < 0 || w.Batch >= s.batches() {
		return fmt.Errorf("batch %d of %d: %w", w.Batch, s.batches(), ErrWork)
	}
	if n := s.size(w.Batch); len(w.BPD) != n || len(w.Coarse) != n || w.NFE < 0 {
		return fmt.Errorf("batch %d holds %d fine and %d coarse values and %d evaluations, want %d of each: %w",
			w.Batch, len(w.BPD), len(w.Coarse), w.NFE, n, ErrWork)
	}
	for i := range w.BPD {
		if math.IsNaN(w.BPD[i]) || math.IsInf(w.BPD[i], 0) || math.IsNaN(w.Coarse[i]) || math.IsInf(w.Coarse[i], 0) {
			return fmt.Errorf("image %d has a non-finite bpd: %w", w.Batch*s.Batch+i, ErrWork)
		}
	}
	return nil
}

// likelihoodKept is the likelihood kept in a work folder: its store and
// the batches of a legacy likelihood.json.
type likelihoodKept struct {
	*workstore.Store
	legacy *legacyLikelihood // nil: none
	want   likelihoodSettings
}

// openLikelihood reads the likelihood kept in cfg.Work for want on the
// network of digest (an empty store when cfg.Work is ""): a file made
// with other settings or malformed is an ErrWork, never silently replaced.
func openLikelihood(cfg ModelEvalConfig, want likelihoodSettings, digest, backend string) (*likelihoodKept, error) {
	s, err := workstore.Open(workstore.Options{Who: "mnist-model", Dir: cfg.Work, Stem: likelihoodStem, Config: want, Networks: digest,
		Shard: cfg.shard(), Backend: backend,
		Row: func(raw json.RawMessage) (string, error) {
			var w batchWork
			if err := workstore.DecodeStrict(raw, &w); err != nil {
				return "", err
			}
			return batchKey(w.Batch), want.check(w)
		}})
	if err != nil {
		return nil, err
	}
	legacy, err := readLegacyLikelihood(cfg.Work, want, digest)
	if err != nil {
		return nil, err
	}
	return &likelihoodKept{Store: s, legacy: legacy, want: want}, nil
}

// batch returns the kept batch b: the store's, else the legacy file's.
func (k *likelihoodKept) batch(b int) (batchWork, bool, error) {
	var w batchWork
	if found, err := k.Get(batchKey(b), &w); err != nil || found {
		return w, found, err
	}
	return k.legacy.batch(k.want, b)
}

// held is the number of batches kept.
func (k *likelihoodKept) held() int {
	n := 0
	for b := range k.want.batches() {
		if _, found, _ := k.batch(b); found {
			n++
		}
	}
	return n
}

// keep keeps the computed batch w.
func (k *likelihoodKept) keep(w batchWork) error { return k.Put(batchKey(w.Batch), w) }

// where says where the kept likelihood was computed, and in how many
// seconds, the legacy file's included.
func (k *likelihoodKept) where() (string, float64) {
	machines, backends := k.Machines()
	seconds := k.ReadSeconds()
	if k.legacy != nil {
		machines = append([]string{k.legacy.Machine}, machines...) // Where splits the " and "-joined lists
		backends = append([]string{k.legacy.Backend}, backends...)
		seconds += k.legacy.Seconds
	}
	return workstore.Where(machines, backends), seconds
}

// samplesSettings are what the samples are made for (the samples store's
// Config; the network's digest is its Networks); each scale is a row.
type samplesSettings struct {
	Network  string `json:"network"`
	PerClass int    `json:"per_class"`
	Steps    int    `json:"steps"`
	Seed     uint64 `json:"seed"`
}

// samplesRow describes the samples of one scale: their IDX file in the
// work folder and its SHA-256, so that a file replaced since is refused.
type samplesRow struct {
	Scale  float64 `json:"scale"`
	File   string  `json:"file"`
	SHA256 string  `json:"sha256"`
}

func samplesKey(scale float64) string { return "scale " + formatScale(scale) }

// CheckModelWork reads the files a work folder holds (the stores' files,
// legacy likelihood.json and samples_s*.json) strictly, so that a
// malformed one is reported before any work, and says whether another run
// holds the work cfg would lock; whether the files' settings match is
// checked when the run knows its network.
func CheckModelWork(cfg ModelEvalConfig) error {
	dir := cfg.Work
	if dir == "" {
		return nil
	}
	if err := workstore.CheckDir("mnist-model", dir); err != nil {
		return err
	}
	if err := workstore.Probe("mnist-model", dir, cfg.workLock(), cfg.workWhat()); err != nil {
		return err
	}
	if err := workstore.Check("mnist-model", dir, likelihoodStem, samplesStem); err != nil {
		return err
	}
	strict := func(path string, v any) error {
		_, err := workstore.ReadStrict("mnist-model", path, v)
		return err
	}
	if err := strict(filepath.Join(dir, legacyLikelihoodFile), &legacyLikelihood{}); err != nil {
		return err
	}
	infos, _ := filepath.Glob(filepath.Join(dir, "samples_s*.json"))
	for _, p := range infos {
		if err := strict(p, &legacySamples{}); err != nil {
			return err
		}
	}
	return nil
}

// checkShard refuses a malformed shard, and a shard without a work folder
// or without the likelihood (the part shards split).
func (c ModelEvalConfig) checkShard() error {
	if c.Shard == "" {
		return nil
	}
	if _, err := workstore.ParseShard(c.Shard); err != nil {
		return fmt.Errorf("mnist-model: %w", err)
	}
	if c.Work == "" {
		return fmt.Errorf("mnist-model: a shard (%s) needs a work folder to keep its batches in: %w", c.Shard, ErrWork)
	}
	if !c.part(PartLikelihood) {
		return fmt.Errorf("mnist-model: a shard (%s) computes the likelihood's batches, a part not asked for: %w", c.Shard, ErrWork)
	}
	return nil
}

// workLock is the lock cfg's run takes: a shard's file, or the whole run's
// work.
func (c ModelEvalConfig) workLock() string {
	if sh := c.shard(); !sh.Whole() {
		return sh.File(likelihoodStem)
	}
	return modelWorkLock
}

// workWhat names the locked work in messages.
func (c ModelEvalConfig) workWhat() string {
	if sh := c.shard(); !sh.Whole() {
		return filepath.Join(c.Work, sh.File(likelihoodStem))
	}
	return "work folder " + c.Work
}

// ErrWork is wrapped by every error about a work folder whose files are
// malformed or were made for other settings (workstore.ErrWork, which the CLI
// reports as bad input).
var ErrWork = workstore.ErrWork
