package mnist

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/adjoint"
)

// The rewards of adjoint-guided sampling on MNIST, by name (see rewards.go
// for what each stands in for). Each is reported as a reward, −L, higher
// is better.
const (
	RewardClass    = "class"    // log p(k | x₀) of the classifier, target k = row mod 10 (aesthetic / PickScore role)
	RewardStyle    = "style"    // −Gram-matrix style loss on the classifier's hidden features (CLIP style loss role)
	RewardIdentity = "identity" // −distance of penultimate features to a reference (ArcFace identity role)
	RewardCentring = "centring" // −squared offset of the ink's centre of mass (the designed "aesthetic")
)

// Reference images of the style and identity rewards: the first test image
// of each digit (fixed, so the figures can be reproduced).
const (
	StyleRefDigit    = 0
	IdentityRefDigit = 7
)

// RewardSet is MNIST's rewards by name, on one set of networks, with the
// style and identity rewards' reference test images: what the adjoint
// study (studies/adjoint) asks of a problem.
type RewardSet struct {
	nets            *Networks
	styleRef, idRef []float64
}

// OpenRewards opens the networks of folder dir ("": the committed ones)
// and the test images, and returns their rewards.
func OpenRewards(dir string) (*RewardSet, error) {
	nets, err := OpenNetworks(dir)
	if err != nil {
		return nil, err
	}
	test, err := Load(Test)
	if err != nil {
		return nil, err
	}
	return NewRewardSet(nets, test)
}

// NewRewardSet is the rewards of nets with references from the test set.
func NewRewardSet(nets *Networks, test *Set) (*RewardSet, error) {
	ref := func(digit int) ([]float64, error) {
		for i, l := range test.Labels {
			if int(l) == digit {
				x, err := test.Scaled(i, 1)
				if err != nil {
					return nil, err
				}
				return x.RawRowView(0), nil
			}
		}
		return nil, fmt.Errorf("mnist: no test image of digit %d", digit)
	}
	s, err := ref(StyleRefDigit)
	if err != nil {
		return nil, err
	}
	id, err := ref(IdentityRefDigit)
	if err != nil {
		return nil, err
	}
	return &RewardSet{nets: nets, styleRef: s, idRef: id}, nil
}

// Loss is the loss of reward name for rows samples (the class reward's
// target of row i is i mod 10).
func (r *RewardSet) Loss(name string, rows int) (adjoint.Loss, error) {
	switch name {
	case RewardClass:
		target := make([]int, rows)
		for i := range target {
			target[i] = i % 10
		}
		return r.nets.ClassReward(target...)
	case RewardStyle:
		return r.nets.StyleReward(r.styleRef)
	case RewardIdentity:
		return r.nets.IdentityReward(r.idRef)
	case RewardCentring:
		return CentringReward(), nil
	}
	return nil, fmt.Errorf("mnist: unknown reward %q (want %s, %s, %s or %s)", name, RewardClass, RewardStyle, RewardIdentity, RewardCentring)
}

// About says what reward name measures and what it stands in for.
func (r *RewardSet) About(name string) string {
	switch name {
	case RewardClass:
		return "log p(k | x₀) of the classifier, target k = seed mod 10 (stands in for the aesthetic score / PickScore)"
	case RewardStyle:
		return fmt.Sprintf("−Gram-matrix style loss on the classifier's hidden features against the first test image of digit %d (CLIP style loss)", StyleRefDigit)
	case RewardIdentity:
		return fmt.Sprintf("−distance of the classifier's penultimate features to those of the first test image of digit %d (ArcFace identity loss)",
			IdentityRefDigit)
	case RewardCentring:
		return "−squared offset (pixels²) of the ink's centre of mass from the image centre (the designed differentiable aesthetic: " +
			"MNIST digits are centred by construction, so an off-centre sample is a visible defect)"
	}
	return ""
}

// Confidence is the classifier's mean max-class probability of the
// images x (clipped by the caller): a sample that no longer reads as any
// digit scores low.
func (r *RewardSet) Confidence(x *mat.Dense) (float64, error) {
	lp, _, err := r.nets.Classifier.LogProbs(x)
	if err != nil {
		return 0, err
	}
	rows, k := lp.Dims()
	s := 0.0
	for i := range rows {
		m := math.Inf(-1)
		for j := range k {
			m = math.Max(m, lp.At(i, j))
		}
		s += math.Exp(m)
	}
	return s / float64(rows), nil
}

// SampleGrid draws rows of images with a value under each and a label per
// row (ImageGrid), and returns the height the grid needs (margins included).
func (r *RewardSet) SampleGrid(title, xlabel, ylabel string, rows [][]*mat.Dense, values [][]float64, labels []string) (*plot.Plot, vg.Length, error) {
	p, err := ImageGrid(title, xlabel, ylabel, rows, values)
	if err != nil {
		return nil, 0, err
	}
	LabelRows(p, labels)
	return p, vg.Length(float64(len(rows))*0.62*gridStripScale)*vg.Inch + 1.3*vg.Inch, nil
}
