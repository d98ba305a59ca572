package model

import (
	"fmt"
	"path/filepath"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/problem"
)

// evalNetwork is the ε-network RunModelEval evaluates, with one line on
// it: the weights checkpoint cfg.Checkpoint (e.g. a researcher's network
// that dfx import wrote) or lab's network cfg.Name of cfg.Dir.
func evalNetwork(p *problem.Problem, lab Lab, cfg ModelEvalConfig) (*model.Store, string, error) {
	if cfg.Checkpoint == "" {
		return lab.Network(cfg.Dir, cfg.Name)
	}
	store, c, err := checkpointNetwork(p, cfg.Checkpoint)
	if err != nil {
		return nil, "", err
	}
	about := fmt.Sprintf("%s (%s", filepath.Base(cfg.Checkpoint), c.Header.Provenance.Data)
	if sum := c.Header.Provenance.ONNX; len(sum) >= 12 {
		about += ", ONNX sha256 " + sum[:12] + "…"
	}
	return store, about + ")", nil
}

// checkpointNetwork is the ε-network of the weights checkpoint file, which
// must take p's points on p's schedule, and its checkpoint.
func checkpointNetwork(p *problem.Problem, file string) (*model.Store, *checkpoint.Checkpoint, error) {
	set, err := checkpoint.ReadSet([]string{file}, p.Dim, p.Schedule)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := set.Use("", "mnist-model -checkpoint"); err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	return set.Store, set.Of[models.ScoreScope], nil
}

// conditional says whether the ε-network in store takes a class (the
// samples part draws class-conditional samples).
func conditional(store *model.Store) bool {
	return model.GetRootParamOr(store, models.ParamNumClasses, 0) > 0
}

// referenceMixture is the skip mixture of lab's network cfg.Name (nil:
// it has none), the closed-form reference of a network without a skip,
// and what to call it.
func referenceMixture(lab Lab, cfg ModelEvalConfig) (*mixture.Gaussian, string, error) {
	store, _, err := lab.Network(cfg.Dir, cfg.Name)
	if err != nil || !models.HasNetwork(store, models.MixtureScope) {
		return nil, "", err
	}
	g, err := models.MixtureSkipOf(store)
	return g, fmt.Sprintf("the skip mixture of the ε-network %s", cfg.Name), err
}

// checkEvalCheckpoint checks c's sizes (the likelihood's images within the
// test set) and, with a checkpoint, that it
// holds an ε-network for MNIST's points and schedule and, where a part
// draws class-conditional samples, that the network takes a class.
func checkEvalCheckpoint(c ModelEvalConfig) error {
	if c.Images < 1 || c.Probes < 1 {
		return fmt.Errorf("mnist-model: -images and -probes must be ≥ 1, have %d and %d", c.Images, c.Probes)
	}
	if c.part(PartLikelihood) {
		test, err := mnist.Load(mnist.Test)
		if err != nil {
			return err
		}
		if n := len(test.Labels); c.Images > n {
			return fmt.Errorf("mnist-model: -images %d, the test set holds %d", c.Images, n)
		}
	}
	if c.Checkpoint == "" {
		return nil
	}
	store, _, err := checkpointNetwork(mnist.Problem(), c.Checkpoint)
	if err != nil {
		return err
	}
	if !conditional(store) && (c.part(PartSamples) || c.part(PartQuality)) {
		return fmt.Errorf("checkpoint: %s holds an unconditional ε-network; the samples are class-conditional: use -parts likelihood",
			c.Checkpoint)
	}
	return nil
}

// label names the evaluated network in tables and the work folder's
// settings.
func (c ModelEvalConfig) label() string {
	if c.Checkpoint != "" {
		return filepath.Base(c.Checkpoint)
	}
	return c.Name
}
