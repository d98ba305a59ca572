package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
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

// likelihoodWork is the likelihood part as kept in Work/likelihood.json:
// the per-image bpd of the first len(BPD) images, written after every
// batch, so that a run resumes where an earlier one stopped. The settings
// must match the run's for it to be used.
type likelihoodWork struct {
	Network string    `json:"network"`
	Digest  string    `json:"digest"`
	Images  int       `json:"images"`
	Batch   int       `json:"batch"` // images per solve: a batch's Hutchinson probes depend on the rows' places in it
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

// addMachine records that the likelihood was (also) computed on machine
// with backend, once.
func (w *likelihoodWork) addMachine(machine, backend string) {
	if !slices.Contains(strings.Split(w.Machine, " and "), machine) {
		w.Machine += " and " + machine
	}
	if !slices.Contains(strings.Split(w.Backend, " and "), backend) {
		w.Backend += " and " + backend
	}
}

func (w *likelihoodWork) matches(o *likelihoodWork) error {
	if w.Network != o.Network || w.Digest != o.Digest || w.Images != o.Images || w.Batch != o.Batch || w.RTol != o.RTol || w.Probes != o.Probes ||
		w.Seed != o.Seed || w.Trace != o.Trace {
		return fmt.Errorf("it was made for %s (digest %.12s) on %d images in batches of %d, rtol %g, %d probes, seed %d, trace %s; "+
			"this run asks for %s (digest %.12s), %d, %d, %g, %d, %d, %s: %w",
			o.Network, o.Digest, o.Images, o.Batch, o.RTol, o.Probes, o.Seed, o.Trace,
			w.Network, w.Digest, w.Images, w.Batch, w.RTol, w.Probes, w.Seed, w.Trace, ErrWork)
	}
	if len(o.BPD) != len(o.Coarse) || len(o.BPD) > o.Images || len(o.BPD)%o.Batch != 0 && len(o.BPD) != o.Images {
		return fmt.Errorf("it holds %d fine and %d coarse values for %d images in batches of %d: %w", len(o.BPD), len(o.Coarse), o.Images, o.Batch, ErrWork)
	}
	for i := range o.BPD {
		if math.IsNaN(o.BPD[i]) || math.IsInf(o.BPD[i], 0) || math.IsNaN(o.Coarse[i]) || math.IsInf(o.Coarse[i], 0) {
			return fmt.Errorf("image %d has a non-finite bpd: %w", i, ErrWork)
		}
	}
	return nil
}

// loadLikelihood returns the likelihood kept in dir that matches want (a
// copy of want when there is none); a file made with other settings or
// malformed is an error, never silently replaced.
func loadLikelihood(dir string, want *likelihoodWork) (*likelihoodWork, error) {
	if dir == "" {
		return want, nil
	}
	path := filepath.Join(dir, "likelihood.json")
	var got likelihoodWork
	if found, err := workstore.ReadStrict("mnist-model", path, &got); err != nil || !found {
		return want, err
	}
	if err := want.matches(&got); err != nil {
		return nil, fmt.Errorf("mnist-model: %s: %w (remove it, or use another work folder)", path, err)
	}
	return &got, nil
}

func saveLikelihood(dir string, w *likelihoodWork) error {
	if dir == "" {
		return nil
	}
	raw, err := json.MarshalIndent(w, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, "likelihood.json"), raw)
}

// samplesPath is where the samples at guidance scale s are kept.
func samplesPath(dir string, s float64) string {
	return filepath.Join(dir, "samples_s"+strconv.FormatFloat(s, 'g', -1, 64)+".idx")
}

// samplesWork says what the samples of Work/samples_s<scale>.idx are
// (Work/samples_s<scale>.json): a file made with other settings is refused.
type samplesWork struct {
	Network  string  `json:"network"`
	Digest   string  `json:"digest"`
	Scale    float64 `json:"scale"`
	PerClass int     `json:"per_class"`
	Steps    int     `json:"steps"`
	Seed     uint64  `json:"seed"`
	Machine  string  `json:"machine,omitempty"`
	Backend  string  `json:"backend,omitempty"`
}

func samplesInfoPath(dir string, s float64) string {
	return strings.TrimSuffix(samplesPath(dir, s), ".idx") + ".json"
}

// loadSamples reads the samples kept in dir for want's settings (nil when
// there are none); samples made with other settings, or a file of another
// size, are an error.
func loadSamples(dir string, want samplesWork) (*mat.Dense, error) {
	if dir == "" {
		return nil, nil
	}
	path, info := samplesPath(dir, want.Scale), samplesInfoPath(dir, want.Scale)
	var got samplesWork
	found, err := workstore.ReadStrict("mnist-model", info, &got)
	if err != nil {
		return nil, err
	}
	if !found {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("mnist-model: %s has no %s saying what made it (remove it, or use another work folder): %w", path, info, ErrWork)
		}
		return nil, nil
	}
	if got.Network != want.Network || got.Digest != want.Digest || got.Scale != want.Scale || got.PerClass != want.PerClass ||
		got.Steps != want.Steps || got.Seed != want.Seed {
		return nil, fmt.Errorf("mnist-model: %s holds samples of %s (digest %.12s), scale %g, %d per digit, %d steps, seed %d; "+
			"this run asks for %s (digest %.12s), %g, %d, %d, %d (remove it, or use another work folder): %w",
			path, got.Network, got.Digest, got.Scale, got.PerClass, got.Steps, got.Seed,
			want.Network, want.Digest, want.Scale, want.PerClass, want.Steps, want.Seed, ErrWork)
	}
	im, err := mnist.ReadImages(path)
	if err != nil {
		return nil, err
	}
	if n := 10 * want.PerClass; im.N != n || im.Rows != 28 || im.Cols != 28 {
		return nil, fmt.Errorf("mnist-model: %s holds %d images of %d×%d, want %d of 28×28: %w", path, im.N, im.Rows, im.Cols, n, mnist.ErrFormat)
	}
	return scaled8(im.Pixels, im.N)
}

// saveSamples writes the samples x and what made them to dir.
func saveSamples(dir string, w samplesWork, x *mat.Dense) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w.Machine = mnist.Machine()
	raw, err := json.MarshalIndent(w, "", " ")
	if err != nil {
		return err
	}
	if err := mnist.WriteImagesIDX(samplesPath(dir, w.Scale), x); err != nil {
		return err
	}
	return atomicfile.WriteFile(samplesInfoPath(dir, w.Scale), raw)
}

// CheckModelWork reads the files a work folder holds (likelihood.json,
// samples_s*.json) strictly, so that a malformed one is reported before
// any work; whether their settings match is checked when the run knows
// its network.
func CheckModelWork(dir string) error {
	if dir == "" {
		return nil
	}
	if err := workstore.CheckDir("mnist-model", dir); err != nil {
		return err
	}
	if err := workstore.Probe("mnist-model", dir, modelWorkLock, "work folder "+dir); err != nil {
		return err
	}
	strict := func(path string, v any) error {
		_, err := workstore.ReadStrict("mnist-model", path, v)
		return err
	}
	if err := strict(filepath.Join(dir, "likelihood.json"), &likelihoodWork{}); err != nil {
		return err
	}
	infos, _ := filepath.Glob(filepath.Join(dir, "samples_s*.json"))
	for _, p := range infos {
		if err := strict(p, &samplesWork{}); err != nil {
			return err
		}
	}
	return nil
}

// modelWorkLock names the lock of a whole mnist-model work folder.
const modelWorkLock = "mnist-model"

// ErrWork is wrapped by every error about a work folder whose files are
// malformed or were made for other settings (workstore.ErrWork, which the CLI
// reports as bad input).
var ErrWork = workstore.ErrWork
