package model

import (
	"context"

	"github.com/gomlx/compute"
	gomlxmodel "github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/problem"
)

// Lab is what a problem's own network code gives these studies beyond its
// problem.Problem: its networks by name, class-conditional sampling, the
// classes of its training rows and the Gaussian-mixture fits the
// baselines score. mnist.Lab implements it.
type Lab interface {
	// Network is the network name of the folder dir ("": the committed
	// ones), with one line on its training.
	Network(dir, name string) (*gomlxmodel.Store, string, error)
	// Classifier is the classifier of dir ("": the committed one), refused
	// unless it was trained on the problem's training rows.
	Classifier(dir string) (*gomlxmodel.Store, error)
	// Sample draws class-conditional samples [B, d] from the ε-network in
	// store by DDIM in steps steps, row i of class[i] at classifier-free
	// guidance scale scale[i].
	Sample(ctx context.Context, backend compute.Backend, store *gomlxmodel.Store, steps int, seed uint64, class []int, scale []float64) (*mat.Dense, error)
	// Labels are the classes of the rows of the problem's Train.
	Labels(ctx context.Context) ([]int, error)
	// Fit fits a Gaussian mixture to the dequantised training rows.
	Fit(ctx context.Context, opt mixture.FitOptions) (*mixture.Gaussian, error)
}

// quantization is p's pixel grid on [−1, 1], for bits per dimension.
func quantization(p *problem.Problem) likelihood.Quantization {
	return likelihood.Quantization{Levels: p.Image.Levels, Lo: -1, Hi: 1}
}
