package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
)

// samplesFile is the IDX file of the samples at guidance scale s, in the
// work folder.
func samplesFile(scale float64) string { return "samples_s" + formatScale(scale) + ".idx" }

// samplesKept is the samples kept in a work folder: the store that
// describes them, and the legacy descriptions beside it.
type samplesKept struct {
	*workstore.Store
	dir    string
	want   samplesSettings
	digest string
}

// openSamples reads the samples' store in dir for want on the network of
// digest (an empty store when dir is ""); a file made with other settings
// or malformed is an ErrWork.
func openSamples(dir string, want samplesSettings, digest, backend string) (*samplesKept, error) {
	s, err := workstore.Open(workstore.Options{Who: "mnist-model", Dir: dir, Stem: samplesStem, Config: want, Networks: digest, Backend: backend,
		Row: func(raw json.RawMessage) (string, error) {
			var r samplesRow
			if err := workstore.DecodeStrict(raw, &r); err != nil {
				return "", err
			}
			if _, err := hex.DecodeString(r.SHA256); err != nil || len(r.SHA256) != 2*sha256.Size || r.File != samplesFile(r.Scale) {
				return "", fmt.Errorf("samples of scale %g in %q with SHA-256 %q, want %s and a hex digest", r.Scale, r.File, r.SHA256, samplesFile(r.Scale))
			}
			return samplesKey(r.Scale), nil
		}})
	if err != nil {
		return nil, err
	}
	return &samplesKept{Store: s, dir: dir, want: want, digest: digest}, nil
}

// path is the samples' file of scale.
func (k *samplesKept) path(scale float64) string { return filepath.Join(k.dir, samplesFile(scale)) }

// load reads the samples kept for scale (nil when there are none):
// samples without a description (a row, or a legacy samples_s<scale>.json)
// made for the run's settings, a file changed since it was described, or
// one of another size, is an error.
func (k *samplesKept) load(scale float64) (*mat.Dense, error) {
	if k.dir == "" {
		return nil, nil
	}
	var r samplesRow
	described, err := k.Get(samplesKey(scale), &r)
	if err != nil {
		return nil, err
	}
	if !described {
		if described, err = readLegacySamples(k.dir, k.want, scale, k.digest); err != nil {
			return nil, err
		}
	}
	path := k.path(scale)
	raw, err := input.ReadAll(path, workstore.MaxFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && described:
		return nil, fmt.Errorf("mnist-model: %s is described in %s but missing (remove its description, or use another work folder): %w", path, k.dir, ErrWork)
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("mnist-model: %w: %w", err, ErrWork)
	case !described:
		return nil, fmt.Errorf("mnist-model: %s has no description in %s saying what made it (remove it, or use another work folder): %w",
			path, filepath.Join(k.dir, samplesStem+".json"), ErrWork)
	case r.SHA256 != "" && r.SHA256 != digestOf(raw):
		return nil, fmt.Errorf("mnist-model: %s changed since dfx wrote it (remove it and its row, or use another work folder): %w", path, ErrWork)
	}
	im, err := mnist.DecodeImages(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("mnist-model: %s: %w", path, err)
	}
	if n := 10 * k.want.PerClass; im.N != n || im.Rows != 28 || im.Cols != 28 {
		return nil, fmt.Errorf("mnist-model: %s holds %d images of %d×%d, want %d of 28×28: %w", path, im.N, im.Rows, im.Cols, n, mnist.ErrFormat)
	}
	return scaled8(im.Pixels, im.N)
}

// save writes the samples x of scale and describes them in the store.
func (k *samplesKept) save(scale float64, x *mat.Dense) error {
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return err
	}
	raw, err := mnist.EncodeImagesIDX(x)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(k.path(scale), raw); err != nil {
		return err
	}
	return k.Put(samplesKey(scale), samplesRow{Scale: scale, File: samplesFile(scale), SHA256: digestOf(raw)})
}

func digestOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
