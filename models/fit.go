package models

import (
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/train"
)

// Name is the trainer's name in progress displays.
func (tr *Trainer) Name() string { return "dfx-" + tr.Objective.String() }

// TrainSteps runs n optimisation steps without a progress display and
// returns the last batch loss.
func (tr *Trainer) TrainSteps(n int) (loss float64, err error) {
	for range n {
		if loss, err = tr.trainStep(); err != nil {
			return math.NaN(), fmt.Errorf("models: training step %d: %w", tr.step+1, err)
		}
		tr.step++
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return loss, fmt.Errorf("models: loss %g at step %d", loss, tr.step)
		}
	}
	return loss, nil
}

// trainStep takes one optimisation step on the next batch and returns its loss.
func (tr *Trainer) trainStep() (float64, error) {
	b := tr.batch()
	if tr.host != nil {
		return tr.host.step(b, LearningRate(tr.Store, tr.step))
	}
	metrics, err := tr.GoMLX.TrainStep(train.Batch{Inputs: b})
	if err != nil {
		return math.NaN(), err
	}
	loss := scalarOf(metrics[0])
	for _, m := range metrics {
		m.MustFinalizeAll()
	}
	return loss, nil
}

func scalarOf(t *tensors.Tensor) float64 {
	switch v := t.Value().(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	}
	return math.NaN()
}
