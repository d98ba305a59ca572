package onnximport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/timing"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// ErrBadInput is wrapped by every error of TrainTrace, PairStore and
// NewProblem about what they were given (the ε-network's checkpoint, the
// points, the options): bad input, not a failure of dfx.
var ErrBadInput = errors.New("bad input")

func badInput(format string, args ...any) error {
	return fmt.Errorf("onnximport: %s: %w", fmt.Sprintf(format, args...), ErrBadInput)
}

// TraceOptions say what TrainTrace trains and for how long.
type TraceOptions struct {
	Objective models.Objective // models.DFTM (t_θ) or models.DFTMCentred (ν_θ)
	Steps     int              // ≥ 1
	// Params are the trace network's hyperparameters (models.Param*), over
	// TraceParams(Steps); nil keeps those.
	Params   map[string]any
	Data     string    // what the training points are (e.g. their file), recorded in the record
	Progress io.Writer // nil: none
}

// TraceRecord is what a trace network trained by TrainTrace records of its
// training (the checkpoint's Config).
type TraceRecord struct {
	Net    string // df-tm or df-tm-c
	Data   string
	Points int
	Steps  int
	Curve  models.LossCurve
	// Seconds, Machine and Backend say how long training took and where
	// (absent from files of an earlier dfx).
	Seconds          float64 `json:",omitempty"`
	Machine, Backend string  `json:",omitempty"`
}

// TraceParams are the default hyperparameters of a trace network for an
// imported ε-network: a residual MLP 256×3 with its own time embedding,
// Adam with warm-up and cosine decay over steps, EMA 0.99 (the MNIST trace
// networks' recipe, without their mixture skip, which an imported network
// does not have). The architecture's keys are set under the trace
// network's own scope (e.g. /df-tm/width): the imported ε-network's root
// settings stay its own, so that dfx nll combines the two files.
func TraceParams(steps int) map[string]any {
	return map[string]any{
		models.ParamWidth: 256, models.ParamDepth: 3, models.ParamEmbedDim: 32, models.ParamEmbedMaxFreq: 8.0,
		models.ParamActivation: "silu", models.ParamWeightLayout: models.LayoutOutIn,
		models.ParamBatchSize: 128, models.ParamLearningRate: 1e-3, models.ParamWarmupSteps: min(100, steps/10),
		models.ParamCosineSteps: steps, models.ParamEMADecay: 0.99, models.ParamClipNorm: 1.0, models.ParamSeed: 1,
	}
}

// TraceScopeOf is the scope of the network an objective trains: t_θ for
// DF-TM, ν_θ for centred DF-TM.
func TraceScopeOf(obj models.Objective) (string, error) {
	switch obj {
	case models.DFTM:
		return models.TraceScope, nil
	case models.DFTMCentred:
		return models.CentredTraceScope, nil
	}
	return "", fmt.Errorf("onnximport: objective %s trains no trace network (want %s or %s)", obj, models.DFTM, models.DFTMCentred)
}

// TrainTrace trains the trace network of opt.Objective for the ε-network
// in eps (a checkpoint of dfx import: the score network alone) on data,
// the points the ε-network models (one row each, in its flat layout), and
// returns its weights checkpoint (EMA weights): its provenance names eps's
// digest (Provenance.EpsNetwork, which dfx nll checks the pair by) and
// ONNX file, with eps's data, scaling and dequantisation, since the two
// networks model the same distribution. t_θ's target ‖x₀‖²/d does not
// involve the ε-network; ν_θ's ‖ε̂_θ − ε‖²/d runs it, frozen. Errors about
// eps, data or opt wrap ErrBadInput.
func TrainTrace(ctx context.Context, backend compute.Backend, eps *checkpoint.Checkpoint, data *mat.Dense, opt TraceOptions) (*checkpoint.Checkpoint, error) {
	scope, err := TraceScopeOf(opt.Objective)
	if err != nil {
		return nil, badInput("%v", err)
	}
	epsStore, digest, err := importedEps(eps)
	if err != nil {
		return nil, err
	}
	n, d := data.Dims()
	switch {
	case d != eps.Header.Dim:
		return nil, badInput("the training points have %d values each, the ε-network takes %d", d, eps.Header.Dim)
	case n < 2:
		return nil, badInput("%d training point (want at least 2)", n)
	case opt.Steps < 1:
		return nil, badInput("%d training steps (want ≥ 1)", opt.Steps)
	}
	store, err := traceStore(epsStore, scope, opt)
	if err != nil {
		return nil, err
	}
	sched, err := eps.Header.Provenance.Schedule.Schedule()
	if err != nil {
		return nil, err
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = data.RawRowView(i)
	}
	tr, err := models.NewTrainer(backend, store, sched, opt.Objective, rows, nil)
	if err != nil {
		return nil, badInput("%v", err)
	}
	rec := TraceRecord{Net: opt.Objective.String(), Data: opt.Data, Points: n, Steps: opt.Steps}
	loop := models.Loop{To: int64(opt.Steps), Progress: opt.Progress, Label: "train " + rec.Net, Curve: &rec.Curve, CurveEvery: int64(max(1, opt.Steps/50))}
	start := time.Now()
	if _, err := tr.Run(ctx, loop); err != nil {
		return nil, err
	}
	rec.Seconds, rec.Machine, rec.Backend = time.Since(start).Seconds(), timing.Machine(), backend.Name()
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	c, err := checkpoint.Weights(store, d, []string{scope}, raw)
	if err != nil {
		return nil, err
	}
	ep := eps.Header.Provenance
	p := checkpoint.Provenance{Data: ep.Data, Scaling: ep.Scaling, Dequantize: ep.Dequantize, EpsNetwork: digest, ONNX: ep.ONNX}
	if err := checkpoint.Stamp(c, sched, p); err != nil {
		return nil, err
	}
	return c, nil
}

// importedEps is the store of an imported ε-network's checkpoint and its
// digest.
func importedEps(eps *checkpoint.Checkpoint) (*model.Store, string, error) {
	p := eps.Header.Provenance
	switch {
	case !slices.Equal(eps.Header.Networks, []string{models.ScoreScope}):
		return nil, "", badInput("the ε-network's checkpoint holds the networks %v, want the score network alone", eps.Header.Networks)
	case p == nil || p.ONNX == "" || p.Schedule == nil:
		return nil, "", badInput("the ε-network's checkpoint was not written by dfx import (its provenance names no ONNX file)")
	}
	digest, err := checkpoint.Digest(eps, models.ScoreScope)
	if err != nil {
		return nil, "", err
	}
	store, err := loadCopy(eps)
	return store, digest, err
}

// traceStore is a new store with the trace network's hyperparameters
// (the training-only ones at the root, the rest under scope), the
// ε-network's dtype and classes, and for ν_θ the ε-network itself (frozen
// by the trainer).
func traceStore(eps *model.Store, scope string, opt TraceOptions) (*model.Store, error) {
	store := model.NewStore()
	params := TraceParams(opt.Steps)
	maps.Copy(params, opt.Params)
	for k, v := range params {
		if checkpoint.TrainingOnlyParams["/"+k] {
			store.SetParam(k, v)
		} else {
			store.SetParam("/"+scope+"/"+k, v)
		}
	}
	store.SetParams(map[string]any{
		models.ParamDType:      model.GetRootParamOr(eps, models.ParamDType, "float32"),
		models.ParamNumClasses: model.GetRootParamOr(eps, models.ParamNumClasses, 0),
	})
	if opt.Objective == models.DFTMCentred {
		if err := models.CopyTrainable(store, eps); err != nil {
			return nil, err
		}
	}
	return store, nil
}

// PairStore is the store of an imported ε-network and a trace network made
// for it (TrainTrace), side by side, after checkpoint.CheckPair.
func PairStore(eps, trace *checkpoint.Checkpoint) (*model.Store, error) {
	store, err := loadCopy(eps)
	if err != nil {
		return nil, err
	}
	if err := addTrace(store, eps, trace); err != nil {
		return nil, badInput("%v", err)
	}
	return store, nil
}

// addTrace adds the trace network in trace to store, which holds the
// ε-network of eps, once checkpoint.CheckPair has accepted the pair.
func addTrace(store *model.Store, eps, trace *checkpoint.Checkpoint) error {
	if err := checkpoint.CheckPair(eps, trace); err != nil {
		return err
	}
	other, err := loadCopy(trace)
	if err != nil {
		return err
	}
	return models.CopyTrainable(store, other)
}

// ownCopy is c decoded afresh: checkpoint.LoadWeights hands a checkpoint's
// values to the store it makes (and a trainer or a backend may then move or
// free them), so a checkpoint the caller keeps is loaded from a copy.
func ownCopy(c *checkpoint.Checkpoint) (*checkpoint.Checkpoint, error) {
	raw, err := c.Encode()
	if err != nil {
		return nil, err
	}
	return checkpoint.Decode(raw, "a copy of a checkpoint")
}

// loadCopy is checkpoint.LoadWeights of ownCopy(c).
func loadCopy(c *checkpoint.Checkpoint) (*model.Store, error) {
	own, err := ownCopy(c)
	if err != nil {
		return nil, err
	}
	return checkpoint.LoadWeights(own)
}
