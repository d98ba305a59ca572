package models

import (
	"context"
	"io"
	"math"
	"time"
)

// LossCurve is a training loss curve: Loss[i] is the mean batch loss of the
// steps after Step[i-1] up to Step[i].
type LossCurve struct {
	Step []int64
	Loss []float64
}

// Loop is one training run: every network of dfx (the toy networks, the
// access comparison's and the adjoint study's, the MNIST networks and the
// ablation's variants) trains through Trainer.Run with one.
type Loop struct {
	// To is the step to train to: a trainer at step s (a resumed one, or
	// one trained before) runs To − s steps; none when s ≥ To.
	To int64
	// Progress, if not nil, receives a progress display with the loss,
	// steps/s and ETA, labelled Label (default the trainer's Name).
	Progress io.Writer
	Label    string
	// Curve, if not nil, gets the mean batch loss of the steps since its
	// last point after every step that is a multiple of CurveEvery (1 when
	// 0), and after step To.
	Curve      *LossCurve
	CurveEvery int64
	// Hooks run in order after each step that is a multiple of their Every
	// (and after step To when AtEnd); an error stops the run.
	Hooks []Hook
}

// Hook is work done along a training run: validation, a state save, a log
// line.
type Hook struct {
	Every int64
	AtEnd bool
	Run   func(s LoopState) error
}

// LoopState is what a hook sees.
type LoopState struct {
	Step int64
	Loss float64 // the step's batch loss
	// Train is the time spent in training steps in this Run, hooks
	// excluded.
	Train time.Duration
}

// Run trains to l.To, checking ctx before every step; a cancelled ctx
// returns its error with the trainer at the last completed step (so the
// caller can save it). It returns the state after the last step (Loss NaN
// when no step ran; Train the time of all of Run's steps).
func (tr *Trainer) Run(ctx context.Context, l Loop) (LoopState, error) {
	st := LoopState{Step: tr.step, Loss: math.NaN()}
	if tr.step >= l.To {
		return st, nil
	}
	var pr *Progress
	if l.Progress != nil {
		label := l.Label
		if label == "" {
			label = tr.Name()
		}
		pr = NewProgress(l.Progress, label, int(l.To-tr.step))
		defer pr.Done()
	}
	every := max(l.CurveEvery, 1)
	sum, count := 0.0, 0
	for tr.step < l.To {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		t0 := time.Now()
		loss, err := tr.TrainSteps(1)
		st.Train += time.Since(t0)
		if err != nil {
			return st, err
		}
		st.Step, st.Loss = tr.step, loss
		sum += loss
		count++
		last := st.Step == l.To
		if pr != nil {
			pr.Update(loss, sum/float64(count))
		}
		if st.Step%every == 0 || last {
			if l.Curve != nil {
				l.Curve.Step = append(l.Curve.Step, st.Step)
				l.Curve.Loss = append(l.Curve.Loss, sum/float64(count))
			}
			sum, count = 0, 0
		}
		for _, h := range l.Hooks {
			if (h.Every > 0 && st.Step%h.Every == 0) || (last && h.AtEnd) {
				if err := h.Run(st); err != nil {
					return st, err
				}
			}
		}
	}
	return st, nil
}
