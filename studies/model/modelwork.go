package mnist

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/internal/worklock"
)

// ErrWork is wrapped by every error about a work folder (DFX_MNIST_MODEL_WORK,
// DFX_MNIST_DENSITY_WORK) whose files are malformed or were made for
// other settings.
var ErrWork = errors.New("unusable work file")

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
	if w.Network != o.Network || w.Digest != o.Digest || w.Images != o.Images || w.Batch != o.Batch || w.RTol != o.RTol || w.Probes != o.Probes || w.Seed != o.Seed || w.Trace != o.Trace {
		return fmt.Errorf("it was made for %s (digest %.12s) on %d images in batches of %d, rtol %g, %d probes, seed %d, trace %s; this run asks for %s (digest %.12s), %d, %d, %g, %d, %d, %s: %w",
			o.Network, o.Digest, o.Images, o.Batch, o.RTol, o.Probes, o.Seed, o.Trace, w.Network, w.Digest, w.Images, w.Batch, w.RTol, w.Probes, w.Seed, w.Trace, ErrWork)
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
	if found, err := readStrict("mnist-model", path, &got); err != nil || !found {
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
	found, err := readStrict("mnist-model", info, &got)
	if err != nil {
		return nil, err
	}
	if !found {
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("mnist-model: %s has no %s saying what made it (remove it, or use another work folder): %w", path, info, ErrWork)
		}
		return nil, nil
	}
	if got.Network != want.Network || got.Digest != want.Digest || got.Scale != want.Scale || got.PerClass != want.PerClass || got.Steps != want.Steps || got.Seed != want.Seed {
		return nil, fmt.Errorf("mnist-model: %s holds samples of %s (digest %.12s), scale %g, %d per digit, %d steps, seed %d; this run asks for %s (digest %.12s), %g, %d, %d, %d (remove it, or use another work folder): %w",
			path, got.Network, got.Digest, got.Scale, got.PerClass, got.Steps, got.Seed, want.Network, want.Digest, want.Scale, want.PerClass, want.Steps, want.Seed, ErrWork)
	}
	im, err := ReadImages(path)
	if err != nil {
		return nil, err
	}
	if n := 10 * want.PerClass; im.N != n || im.Rows != 28 || im.Cols != 28 {
		return nil, fmt.Errorf("mnist-model: %s holds %d images of %d×%d, want %d of 28×28: %w", path, im.N, im.Rows, im.Cols, n, ErrFormat)
	}
	return (&Set{Images: im, Labels: make([]uint8, im.N)}).Scaled(0, im.N)
}

// saveSamples writes the samples x and what made them to dir.
func saveSamples(dir string, w samplesWork, x *mat.Dense) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	w.Machine = Machine()
	raw, err := json.MarshalIndent(w, "", " ")
	if err != nil {
		return err
	}
	if err := WriteImagesIDX(samplesPath(dir, w.Scale), x); err != nil {
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
	if err := checkWorkDir("mnist-model", dir); err != nil {
		return err
	}
	if err := probeWork("mnist-model", dir, modelWorkLock, "work folder "+dir); err != nil {
		return err
	}
	strict := func(path string, v any) error {
		_, err := readStrict("mnist-model", path, v)
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

// checkWorkDir checks, before any work, that a work folder is a folder
// this process can write (it is made when missing), so that a run of hours
// does not fail at its first save.
func checkWorkDir(who, dir string) error {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("%s: work folder %s is not a folder: %w", who, dir, ErrWork)
	}
	if err := outfile.CheckFolderFor(dir); err != nil { // before anything is made
		return fmt.Errorf("%s: work folder %s: %v: %w", who, dir, err, ErrWork)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: work folder: %v: %w", who, err, ErrWork)
	}
	if err := outfile.CheckFolder(dir); err != nil {
		return fmt.Errorf("%s: work folder %s: %v: %w", who, dir, err, ErrWork)
	}
	return nil
}

// lockWork keeps two runs off the work file name in dir (what names it
// in messages: the file, or the folder when the lock covers it all): it
// takes the lock .<name>.lock there (worklock) for the run, which Releases
// it when done. Another run holding it, or a lock that cannot be taken, is
// an ErrWork, said at once; where files cannot be locked (a platform
// without flock, a filesystem that refuses it) the run goes on unlocked,
// saying so on log. dir "" keeps no work and takes no lock (a nil Lock,
// whose Release is a no-op).
func lockWork(who, dir, name, what string, log io.Writer) (*worklock.Lock, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: work folder: %v: %w", who, err, ErrWork)
	}
	l, err := worklock.Acquire(filepath.Join(dir, "."+name+".lock"))
	var busy *worklock.BusyError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &busy):
		return nil, fmt.Errorf("%s: %s is in use by %s: wait for it to end, or give this run another folder: %w", who, what, busy.Holder, ErrWork)
	case errors.Is(err, worklock.ErrUnsupported):
		if log != nil {
			fmt.Fprintf(log, "%s: %s is not locked (%v): nothing keeps a second run off it\n", who, what, err)
		}
		return nil, nil
	}
	return nil, fmt.Errorf("%s: cannot lock %s: %v: %w", who, what, err, ErrWork)
}

// probeWork says, before a run starts, whether lockWork would refuse it
// (another run holds the lock); the run itself takes the lock.
func probeWork(who, dir, name, what string) error {
	l, err := lockWork(who, dir, name, what, nil)
	if err != nil {
		return err
	}
	return l.Release()
}

// CheckTrainFree is an error (ErrWork) while another run trains the
// network name into the state folder dir (TrainNetwork's lock), so that
// `dfx train` says so before it looks at the saved state.
func CheckTrainFree(dir, name string) error {
	return probeWork("train "+name, dir, filepath.Base(statePath(dir, name)), statePath(dir, name))
}

// modelWorkLock names the lock of a whole mnist-model work folder.
const modelWorkLock = "mnist-model"

// maxWorkFile bounds the size of a work file read back (the largest, the
// full density experiment's, is a few MB).
const maxWorkFile = 256 << 20

// readStrict decodes the JSON file path into v, refusing unknown fields,
// trailing data and files over maxWorkFile; found is false when there is
// no such file. who prefixes the messages.
func readStrict(who, path string, v any) (found bool, err error) {
	raw, err := input.ReadAll(path, maxWorkFile) // a regular file, its size checked before it is read
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("%s: work file %v: %w", who, err, ErrWork)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return true, fmt.Errorf("%s: %s: %v: %w", who, path, err, ErrWork)
	}
	if _, err := dec.Token(); err != io.EOF {
		return true, fmt.Errorf("%s: %s: data after the JSON value: %w", who, path, ErrWork)
	}
	return true, nil
}
