package model

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"github.com/dfx-lab/dfx/internal/workstore"
)

// An earlier dfx kept the work in files of their own format: the
// likelihood in likelihood.json, the description of samples_s<scale>.idx in
// samples_s<scale>.json. dfx wrote them, so a run reads them as a source
// of rows (made with other settings: refused, as before), and never
// rewrites or removes them; what it computes goes into the stores.

// legacyLikelihoodFile is the likelihood's file of an earlier dfx.
const legacyLikelihoodFile = "likelihood.json"

// legacyLikelihood is the format of likelihood.json: the per-image bpd of
// the first len(BPD) images, in whole batches (the last may be short), and
// the evaluations of each batch.
type legacyLikelihood struct {
	Network string    `json:"network"`
	Digest  string    `json:"digest"`
	Images  int       `json:"images"`
	Batch   int       `json:"batch"`
	RTol    float64   `json:"rtol"`
	Probes  int       `json:"probes"`
	Seed    uint64    `json:"seed"`
	Trace   string    `json:"trace"`
	BPD     []float64 `json:"bpd"`
	Coarse  []float64 `json:"coarse"`
	NFE     []int     `json:"nfe"` // per batch, at RTol
	Machine string    `json:"machine"`
	Backend string    `json:"backend"`
	Seconds float64   `json:"seconds"`
}

// readLegacyLikelihood reads dir's likelihood.json (nil when there is
// none); one made for other settings than want on the network of digest,
// or malformed, is an ErrWork.
func readLegacyLikelihood(dir string, want likelihoodSettings, digest string) (*legacyLikelihood, error) {
	if dir == "" {
		return nil, nil
	}
	path := filepath.Join(dir, legacyLikelihoodFile)
	var o legacyLikelihood
	if found, err := workstore.ReadStrict("mnist-model", path, &o); err != nil || !found {
		return nil, err
	}
	if err := o.matches(want, digest); err != nil {
		return nil, fmt.Errorf("mnist-model: %s: %w (remove it, or use another work folder)", path, err)
	}
	return &o, nil
}

// matches says whether o was made for want on the network of digest, and
// holds whole batches.
func (o *legacyLikelihood) matches(want likelihoodSettings, digest string) error {
	if o.Network != want.Network || o.Digest != digest || o.Images != want.Images || o.Batch != want.Batch || o.RTol != want.RTol ||
		o.Probes != want.Probes || o.Seed != want.Seed || o.Trace != want.Trace {
		return fmt.Errorf("it was made for %s (digest %.12s) on %d images in batches of %d, rtol %g, %d probes, seed %d, trace %s; "+
			"this run asks for %s (digest %.12s), %d, %d, %g, %d, %d, %s: %w",
			o.Network, o.Digest, o.Images, o.Batch, o.RTol, o.Probes, o.Seed, o.Trace,
			want.Network, digest, want.Images, want.Batch, want.RTol, want.Probes, want.Seed, want.Trace, ErrWork)
	}
	n := len(o.BPD)
	if n != len(o.Coarse) || n > o.Images || n%o.Batch != 0 && n != o.Images || len(o.NFE) != want.batchesOf(n) {
		return fmt.Errorf("it holds %d fine and %d coarse values and the evaluations of %d batches for %d images in batches of %d: %w",
			n, len(o.Coarse), len(o.NFE), o.Images, o.Batch, ErrWork)
	}
	if o.Seconds < 0 || math.IsNaN(o.Seconds) || math.IsInf(o.Seconds, 0) {
		return fmt.Errorf("%g seconds: %w", o.Seconds, ErrWork)
	}
	for b := range len(o.NFE) {
		w, _, _ := o.batch(want, b)
		if err := want.check(w); err != nil {
			return err
		}
	}
	return nil
}

// batchesOf is the number of batches of the first n images.
func (s likelihoodSettings) batchesOf(n int) int { return (n + s.Batch - 1) / s.Batch }

// batch is the legacy file's batch b (found false when o is nil or does
// not hold it).
func (o *legacyLikelihood) batch(want likelihoodSettings, b int) (batchWork, bool, error) {
	if o == nil || b >= len(o.NFE) {
		return batchWork{}, false, nil
	}
	lo := b * want.Batch
	hi := min(lo+want.Batch, len(o.BPD))
	return batchWork{Batch: b, BPD: o.BPD[lo:hi], Coarse: o.Coarse[lo:hi], NFE: o.NFE[b]}, true, nil
}

// legacySamples is the format of samples_s<scale>.json, which said what
// made samples_s<scale>.idx.
type legacySamples struct {
	Network  string  `json:"network"`
	Digest   string  `json:"digest"`
	Scale    float64 `json:"scale"`
	PerClass int     `json:"per_class"`
	Steps    int     `json:"steps"`
	Seed     uint64  `json:"seed"`
	Machine  string  `json:"machine,omitempty"`
	Backend  string  `json:"backend,omitempty"`
}

// legacySamplesFile is the description of the samples at scale s of an
// earlier dfx.
func legacySamplesFile(scale float64) string { return "samples_s" + formatScale(scale) + ".json" }

func formatScale(scale float64) string { return strconv.FormatFloat(scale, 'g', -1, 64) }

// readLegacySamples reports whether dir holds a samples_s<scale>.json
// made for want at scale on the network of digest; one made for other
// settings, or malformed, is an ErrWork.
func readLegacySamples(dir string, want samplesSettings, scale float64, digest string) (bool, error) {
	path := filepath.Join(dir, legacySamplesFile(scale))
	var got legacySamples
	found, err := workstore.ReadStrict("mnist-model", path, &got)
	if err != nil || !found {
		return false, err
	}
	if got.Network != want.Network || got.Digest != digest || got.Scale != scale || got.PerClass != want.PerClass ||
		got.Steps != want.Steps || got.Seed != want.Seed {
		return false, fmt.Errorf("mnist-model: %s says its samples are of %s (digest %.12s), scale %g, %d per digit, %d steps, seed %d; "+
			"this run asks for %s (digest %.12s), %g, %d, %d, %d (remove it and its .idx, or use another work folder): %w",
			path, got.Network, got.Digest, got.Scale, got.PerClass, got.Steps, got.Seed,
			want.Network, digest, scale, want.PerClass, want.Steps, want.Seed, ErrWork)
	}
	return true, nil
}
