package mnist

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// What the MNIST networks' checkpoints record of their training data (see
// checkpoint.Provenance): the pixels scaled by Set.Scaled, not dequantised
// (the committed networks), or, for a spec with models.ParamDequantize,
// the lower edges 2p/256 − 1 of the pixels' bins plus fresh uniform noise
// over one bin at every step (so the network models the dequantised
// density whose bits per dimension bound the discrete data's).
const (
	TrainScaling      = "p/127.5 − 1: pixels [0, 255] → [−1, 1] (Set.Scaled)"
	TrainDequantize   = "none"
	DequantScaling    = "2p/256 − 1: pixels [0, 255] → bins [−1, 1) (Set.Dequantized)"
	DequantDequantize = "uniform over each pixel's bin of width 2/256, resampled at every step"
	dequantLevel      = 2.0 / 256
)

// dequantizes reports whether spec trains on dequantised images.
func dequantizes(spec NetSpec) bool {
	v, _ := spec.Params[models.ParamDequantize].(float64)
	return v > 0
}

// DataProvenance names an IDX image set by its split, size and the SHA-256
// of its pixels, so that a checkpoint records exactly which images it was
// trained on whatever folder they came from.
func DataProvenance(split Split, set *Set) string {
	sum := sha256.Sum256(set.Images.Pixels)
	return fmt.Sprintf("idx %s: %d images %d×%d, pixels sha256:%s", split, set.Images.N, set.Images.Rows, set.Images.Cols, hex.EncodeToString(sum[:]))
}

// trainProvenance is the provenance of a network trained on the training
// set; eps is the digest of the ε-network that t_θ and ν_θ go with ("" for
// the others).
func trainProvenance(spec NetSpec, eps string) (checkpoint.Provenance, error) {
	set, err := Load(Train)
	if err != nil {
		return checkpoint.Provenance{}, err
	}
	p := checkpoint.Provenance{Data: DataProvenance(Train, set), Scaling: TrainScaling, Dequantize: TrainDequantize, EpsNetwork: eps}
	if dequantizes(spec) {
		p.Scaling, p.Dequantize = DequantScaling, DequantDequantize
	}
	return p, nil
}

// usesEps reports whether the spec's network is a trace network that must
// name its ε-network.
func usesEps(spec NetSpec) bool {
	return spec.Scope == models.TraceScope || spec.Scope == models.CentredTraceScope
}

// epsDigest is the digest of the ε-network a trace network is trained
// against: the one the spec needs (ν_θ), else the one in dir or committed
// (t_θ, trained beside it).
func epsDigest(dir string, need *model.Store) (string, error) {
	if need == nil {
		c, _, err := loadCheckpoint(dir, "eps")
		if err != nil {
			return "", fmt.Errorf("mnist: the ε-network a trace network is trained against: %w", err)
		}
		return checkpoint.Digest(c, models.ScoreScope)
	}
	return checkpoint.NetworkDigest(need, models.ScoreScope)
}

// checkPairs checks that every network was trained on the same data and
// that t_θ and ν_θ were made for this ε-network.
func checkPairs(ckpts map[string]*checkpoint.Checkpoint, where map[string]string) error {
	eps := ckpts["eps"]
	for name, c := range ckpts {
		if name == "eps" {
			continue
		}
		same := checkpoint.SameTraining
		if name == "classifier" { // a classifier of clean images: the same images suffice
			same = checkpoint.SameData
		}
		if err := same(eps, c); err != nil {
			return fmt.Errorf("mnist: %s and %s: %w", where["eps"], where[name], err)
		}
		if spec, _ := SpecByName(name); usesEps(spec) {
			if err := checkpoint.CheckPair(eps, c); err != nil {
				return fmt.Errorf("mnist: %s and %s: %w", where["eps"], where[name], err)
			}
		}
	}
	return nil
}
