package mnist

import (
	"context"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
)

// What the model studies (studies/model: mnist-model, mnist-baselines,
// mnist-ablation, mnist-candidates) use of this package's networks and
// their training, beside the Problem.

// The ELBO validation's held-out images and log-SNR levels (ValidationELBO).
const (
	ValELBOImages = valELBOImages
	ValELBOLevels = valELBOLevels
)

// ELBOAgainst is ValidationELBO on the last n test images at the given
// number of levels, with the gain measured against skip (nil: none).
func ELBOAgainst(backend compute.Backend, store *model.Store, skip *mixture.Gaussian, n, levels int) (*ELBOVal, error) {
	return elboAgainst(backend, store, skip, n, levels)
}

// Dequantizes reports whether spec's network trains on dequantised images.
func Dequantizes(spec NetSpec) bool { return dequantizes(spec) }

// SkipOptionsV1 is the first skip mixture's fit (10 per class, rank 64).
func SkipOptionsV1() *mixture.FitOptions { return skipOptionsV1() }

// TrainedClassifier is the classifier of dir ("": the committed one),
// refused unless it was trained on the training images of DataDir.
func TrainedClassifier(dir string) (*model.Store, error) {
	cc, where, err := loadCheckpoint(dir, "classifier")
	if err != nil {
		return nil, err
	}
	want, err := trainProvenance(NetSpec{}, "")
	if err != nil {
		return nil, err
	}
	if got := cc.Header.Provenance.Data; got != want.Data {
		return nil, fmt.Errorf("mnist: the classifier %s was trained on %q, the training images here are %q: "+
			"train one on them (`dfx train classifier -out DIR`) and pass DFX_MNIST_NETS=DIR", where, got, want.Data)
	}
	cst, _, err := networkOf(cc, where)
	return cst, err
}

// Lab is this package's networks, sampler, labels and fits as the model
// studies ask for them (studies/model.Lab).
type Lab struct{}

// Network is LoadNetwork's store, with one line on its training.
func (Lab) Network(dir, name string) (*model.Store, string, error) {
	store, rec, err := LoadNetwork(dir, name)
	if err != nil {
		return nil, "", err
	}
	return store, fmt.Sprintf("%s: %d steps, %.1f h on %s", name, rec.Steps, rec.Seconds/3600, rec.Machine), nil
}

// Classifier is TrainedClassifier.
func (Lab) Classifier(dir string) (*model.Store, error) { return TrainedClassifier(dir) }

// Sample is Networks.SampleContext of the ε-network in store.
func (Lab) Sample(ctx context.Context, backend compute.Backend, store *model.Store, steps int, seed uint64, class []int, scale []float64) (*mat.Dense, error) {
	return (&Networks{Backend: backend, Store: store}).SampleContext(ctx, SampleConfig{Steps: steps, Seed: seed}, class, scale)
}

// Labels are the digits of the training images.
func (Lab) Labels(context.Context) ([]int, error) {
	set, err := Load(Train)
	if err != nil {
		return nil, err
	}
	out := make([]int, len(set.Labels))
	for i, l := range set.Labels {
		out[i] = int(l)
	}
	return out, nil
}

// Fit is FitMixtureContext.
func (Lab) Fit(ctx context.Context, opt mixture.FitOptions) (*mixture.Gaussian, error) {
	return FitMixtureContext(ctx, opt)
}
