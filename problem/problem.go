// Package problem is what every study needs to know of a data set: the
// data, its exact reference and its networks. A study (studies/…, ot) is
// written once over a Problem; a data set (toys: 2-D sets and the d = 64
// mixture; mnist: any IDX image set; a user's .npy or CSV data and an
// imported network) is a Problem and a study's configuration, never a
// copy of the study.
//
// Everything that is expensive (reading 60 000 images, fitting a mixture,
// loading networks) is a function called when a study needs it, so that a
// Problem value is cheap to build and to pass around.
package problem

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// Problem is a data set with its exact reference and its networks.
type Problem struct {
	// Name names the problem in tables and folders ("mnist", "gmm-64").
	Name string
	// Dim is d, the dimension of a sample (an image is flattened to d).
	Dim int
	// Schedule is the diffusion's noise schedule.
	Schedule schedule.Schedule
	// Image is the shape of an image sample; zero for other data.
	Image ImageShape
	// Train and Test read the data, rows [N, d] (nil: not available; Test
	// may be nil where a study only draws from Exact).
	Train, Test func(ctx context.Context) (*mat.Dense, error)
	// Exact is the reference whose q_t is known in closed form: the Dirac
	// mixture of the training set, or the mixture the data were drawn from
	// (nil: none).
	Exact func(ctx context.Context) (mixture.Mixture, error)
	// Baseline is a fitted closed-form model a learned one must beat (a
	// Gaussian mixture fitted to Train; nil: none).
	Baseline func(ctx context.Context) (*mixture.Gaussian, error)
	// Networks loads the problem's learned networks from the folder nets
	// ("": the committed ones; nil: the problem has none).
	Networks func(ctx context.Context, nets string) (*Networks, error)
	// Dequantized reads the first n test rows of discrete data uniformly
	// dequantised, x = 2(p + u)/Levels − 1 with u ~ U[0, 1) drawn from seed
	// (nil: the data are not discrete).
	Dequantized func(ctx context.Context, n int, seed uint64) (*mat.Dense, error)
}

// ImageShape is an image's height, width and channels; H·W·C = Dim.
// Pixels are on [-1, 1] with Levels levels (bits per dim count on the
// 256-level grid of the data).
type ImageShape struct {
	H, W, C int
	Levels  int
}

// IsImage reports whether the samples are images.
func (s ImageShape) IsImage() bool { return s.H > 0 && s.W > 0 }

// Quantization is the pixel grid of s: Levels levels on [−1, 1], so that
// bpd = −log₂ p/d + log₂(Levels/2).
func (s ImageShape) Quantization() likelihood.Quantization {
	return likelihood.Quantization{Levels: s.Levels, Lo: -1, Hi: 1}
}

// Networks are a problem's learned networks in dfx/access's contract.
type Networks struct {
	// Net is the ε-network (unconditional), with the DF-TM network t_θ and
	// the centred ν_θ where trained: every trace and F·v estimator of the
	// access registry runs on it.
	Net *access.Net
	// Classifier, if not nil, gives log p(y | x₀) for class guidance and
	// sample quality.
	Classifier Classifier
	// About says in one line what the networks are (for reports; "": nothing).
	About string
	// Classes is the number of classes of Sample and Classifier (0: none).
	Classes int
	// Sample, if not nil, draws class-conditional samples [B, d] by DDIM in
	// steps steps with classifier-free guidance ε̃ = ε_∅ + s (ε_c − ε_∅),
	// row i of class[i] at scale[i], from the problem's prior noise
	// Problem.InitialNoise(seed, 0, B).
	Sample func(ctx context.Context, steps int, seed uint64, class []int, scale []float64) (*mat.Dense, error)
	// Backend names the backend the networks run on.
	Backend string
	// Records are the networks' training records by role: "eps" (the
	// ε-network), "dftm" (t_θ), "dftm-c" (ν_θ), "classifier" (nil: none).
	Records map[string]*TrainRecord
}

// TrainRecord is what a network's checkpoint records of its training.
type TrainRecord struct {
	Steps    int
	Seconds  float64 // wall-clock training time
	Machine  string  // where it was trained
	Backend  string
	Curve    models.LossCurve
	Accuracy float64 // a classifier's test accuracy
}

// Classifier is a clean-sample classifier: LogProbs returns [B, classes]
// log-probabilities of x [B, d].
type Classifier interface {
	LogProbs(x *mat.Dense) (*mat.Dense, error)
}

// Check validates the cheap parts of p: a name, a dimension, a schedule,
// an image shape that matches d.
func (p *Problem) Check() error {
	switch {
	case p == nil:
		return errors.New("problem: nil")
	case p.Name == "":
		return errors.New("problem: no name")
	case p.Dim < 1:
		return fmt.Errorf("problem %s: dimension %d", p.Name, p.Dim)
	case p.Schedule == nil:
		return fmt.Errorf("problem %s: no schedule", p.Name)
	case p.Image.IsImage() && p.Image.H*p.Image.W*max(p.Image.C, 1) != p.Dim:
		return fmt.Errorf("problem %s: image %d×%d×%d is not of dimension %d", p.Name, p.Image.H, p.Image.W, p.Image.C, p.Dim)
	}
	return nil
}

// ExactFrom is an Exact function that returns m.
func ExactFrom(m mixture.Mixture) func(context.Context) (mixture.Mixture, error) {
	return func(context.Context) (mixture.Mixture, error) { return m, nil }
}
