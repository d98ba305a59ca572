package models

import (
	"context"
	"fmt"
	"io"
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

// Fit runs n steps. ctx cancels it between steps. progress (nil for none)
// receives a progress display with the loss, steps/s and ETA (see
// NewProgress); onStep, if not nil, sees each step's batch loss. It returns
// the last batch loss.
func (tr *Trainer) Fit(ctx context.Context, n int, progress io.Writer, onStep func(step int64, loss float64)) (loss float64, err error) {
	if n <= 0 {
		return math.NaN(), nil
	}
	var pr *Progress
	if progress != nil {
		pr = NewProgress(progress, tr.Name(), n)
		defer pr.Done()
	}
	smooth := math.NaN() // exponential moving average of the batch loss, for display
	for range n {
		if err := ctx.Err(); err != nil {
			return loss, err
		}
		if loss, err = tr.TrainSteps(1); err != nil {
			return loss, err
		}
		if math.IsNaN(smooth) {
			smooth = loss
		} else {
			smooth = 0.99*smooth + 0.01*loss
		}
		if onStep != nil {
			onStep(tr.step, loss)
		}
		if pr != nil {
			pr.Update(loss, smooth)
		}
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
