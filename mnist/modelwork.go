package mnist

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/models"
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

func (w *likelihoodWork) matches(o *likelihoodWork) error {
	if w.Network != o.Network || w.Digest != o.Digest || w.Images != o.Images || w.RTol != o.RTol || w.Probes != o.Probes || w.Seed != o.Seed || w.Trace != o.Trace {
		return fmt.Errorf("it was made for %s (digest %.12s) on %d images, rtol %g, %d probes, seed %d, trace %s; this run asks for %s (digest %.12s), %d, %g, %d, %d, %s",
			o.Network, o.Digest, o.Images, o.RTol, o.Probes, o.Seed, o.Trace, w.Network, w.Digest, w.Images, w.RTol, w.Probes, w.Seed, w.Trace)
	}
	if len(o.BPD) != len(o.Coarse) || len(o.BPD) > o.Images {
		return fmt.Errorf("it holds %d fine and %d coarse values for %d images: %w", len(o.BPD), len(o.Coarse), o.Images, models.ErrCheckpoint)
	}
	for i := range o.BPD {
		if math.IsNaN(o.BPD[i]) || math.IsInf(o.BPD[i], 0) || math.IsNaN(o.Coarse[i]) || math.IsInf(o.Coarse[i], 0) {
			return fmt.Errorf("image %d has a non-finite bpd: %w", i, models.ErrCheckpoint)
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
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return want, nil
	}
	if err != nil {
		return nil, err
	}
	var got likelihoodWork
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return nil, fmt.Errorf("mnist-model: %s: %v: %w", path, err, models.ErrCheckpoint)
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

// Quantize8 rounds images in [−1, 1] to 8-bit pixels p = round(127.5 (x+1))
// (clipped to 0…255), as a PNG or an IDX file stores them.
func Quantize8(x *mat.Dense) []uint8 {
	raw := x.RawMatrix()
	out := make([]uint8, 0, raw.Rows*raw.Cols)
	for i := range raw.Rows {
		for _, v := range raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols] {
			out = append(out, uint8(math.Round(min(255, max(0, 127.5*(v+1))))))
		}
	}
	return out
}

// WriteImagesIDX writes 28×28 images x [B, 784] in [−1, 1] as an
// uncompressed IDX image file of 8-bit pixels (Quantize8), atomically.
func WriteImagesIDX(path string, x *mat.Dense) error {
	b, d := x.Dims()
	if d != Dim || b < 1 {
		return fmt.Errorf("mnist: IDX of [%d, %d] images, want [B, %d]", b, d, Dim)
	}
	var buf bytes.Buffer
	for _, v := range []uint32{idxImages, uint32(b), 28, 28} {
		_ = binary.Write(&buf, binary.BigEndian, v)
	}
	buf.Write(Quantize8(x))
	return atomicfile.WriteFile(path, buf.Bytes())
}

// loadSamples reads the samples kept in dir for scale s (nil when there are
// none); a file of another size is an error.
func loadSamples(dir string, s float64, n int) (*mat.Dense, error) {
	if dir == "" {
		return nil, nil
	}
	path := samplesPath(dir, s)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	im, err := ReadImages(path)
	if err != nil {
		return nil, err
	}
	if im.N != n || im.Rows != 28 || im.Cols != 28 {
		return nil, fmt.Errorf("mnist-model: %s holds %d images of %d×%d, this run draws %d of 28×28 (remove it, or use another work folder): %w", path, im.N, im.Rows, im.Cols, n, ErrFormat)
	}
	return (&Set{Images: im, Labels: make([]uint8, im.N)}).Scaled(0, im.N)
}
