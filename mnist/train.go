package mnist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// LossCurve is a training loss curve: Loss[i] is the mean batch loss of the
// LogEvery steps ending at Step[i].
type LossCurve = models.LossCurve

// TrainRecord is what a committed checkpoint records of its training.
type TrainRecord struct {
	Net      string
	Steps    int
	Seconds  float64 // wall-clock training time, summed over resumed runs
	Machine  string  // where it was trained
	Backend  string
	Curve    LossCurve
	Accuracy float64 `json:",omitempty"` // classifier: test-set accuracy
	// Val is the validation (ValidationELBO at every point, ValidationBPD
	// at the first and last) along training, for the ε-networks trained
	// with TrainOptions.ValEvery > 0.
	Val []ValPoint `json:",omitempty"`
}

// TrainOptions controls one `dfx train` run.
type TrainOptions struct {
	Steps     int    // 0: the spec's
	Out       string // folder of the final weights checkpoint <Out>/<name>.dfxckpt
	StateDir  string // folder of the resumable trainer state ("": Out)
	Resume    bool   // continue from <StateDir>/<name>.state.dfxckpt
	SaveEvery int    // steps between state saves (0: 500)
	LogEvery  int    // steps per loss-curve point (0: 50)
	// ValEvery, for an ε-network, is the steps between validations
	// (ValidationELBO; ValidationBPD at the first and last step; recorded in
	// TrainRecord.Val and logged; 0: none).
	ValEvery int
	Progress io.Writer
	Log      io.Writer
	// OnStep, if not nil, is called after every step with the step reached.
	OnStep func(step int64)
	// Needs supplies the stores of the networks a spec needs (nil: load
	// them from Out or the committed checkpoints).
	Needs map[string]*model.Store
}

// statePath and weightsPath are the files of a network under a folder.
func statePath(dir, name string) string   { return filepath.Join(dir, "_"+name+".state.dfxckpt") }
func weightsPath(dir, name string) string { return filepath.Join(dir, name+".dfxckpt") }

// WeightsPath is the file TrainNetwork writes the weights of network name
// to in folder dir.
func WeightsPath(dir, name string) string { return weightsPath(dir, name) }

// StatePath is the file of network name's resumable training state in
// folder dir.
func StatePath(dir, name string) string { return statePath(dir, name) }

// TrainProducer is the Producer recorded in the weights checkpoint of
// network name written by TrainNetwork (dfx train): only a file with it
// is replaced by a later training of the same network.
func TrainProducer(name string) string { return "train " + name }

// TrainingData is the 60 000 training images scaled to [−1, 1], as rows,
// with their labels; with lowerEdges, 2p/256 − 1, the lower edges of the
// pixels' bins, to which a dequantising trainer adds U[0, 2/256).
func TrainingData(lowerEdges bool) ([][]float64, []int, error) {
	set, err := Load(Train)
	if err != nil {
		return nil, nil, err
	}
	var x *mat.Dense
	if lowerEdges {
		x, err = set.rows(0, set.Images.N, func(p uint8, _ int) float64 { return 2*float64(p)/256 - 1 })
	} else {
		x, err = set.Scaled(0, set.Images.N)
	}
	if err != nil {
		return nil, nil, err
	}
	rows := make([][]float64, set.Images.N)
	labels := make([]int, set.Images.N)
	for i := range rows {
		rows[i] = x.RawRowView(i)
		labels[i] = int(set.Labels[i])
	}
	return rows, labels, nil
}

// TrainNetwork trains spec on the MNIST training set and writes its
// weights checkpoint (EMA weights, with a TrainRecord) to
// <Out>/<name>.dfxckpt; the trainer state is saved every SaveEvery steps for
// Resume. ctx cancels the skip's fit, or a run between steps (saving the
// state first). One run at a time trains a network into a state folder: a second
// is refused at once (ErrWork), since both would rewrite the same state.
func TrainNetwork(ctx context.Context, backend compute.Backend, spec NetSpec, opt TrainOptions) (*TrainRecord, error) {
	stateDir := opt.StateDir
	if stateDir == "" {
		stateDir = opt.Out
	}
	lock, err := workstore.Lock("train "+spec.Name, stateDir, filepath.Base(statePath(stateDir, spec.Name)), statePath(stateDir, spec.Name), opt.Log)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	run, err := newTrainRun(ctx, backend, spec, opt)
	if err != nil {
		return nil, err
	}
	if err := run.steps(ctx); err != nil {
		return nil, err
	}
	return run.finish()
}

// trainRun is one TrainNetwork run: the spec, the trainer and the record.
type trainRun struct {
	backend                    compute.Backend
	spec                       NetSpec
	opt                        TrainOptions
	total, saveEvery, logEvery int
	log                        io.Writer
	stateDir, sp               string // the state's folder and file
	store                      *model.Store
	tr                         *models.Trainer
	prov                       checkpoint.Provenance // what the trainer's state and weights record
	rec                        *TrainRecord
}

// newTrainRun builds the store (the networks it needs, the fitted or
// restored skip), the trainer and its provenance, resuming from the saved
// state with opt.Resume.
func newTrainRun(ctx context.Context, backend compute.Backend, spec NetSpec, opt TrainOptions) (*trainRun, error) {
	if opt.Out == "" {
		return nil, errors.New("mnist: no output folder")
	}
	r := &trainRun{backend: backend, spec: spec, opt: opt, total: spec.Steps, saveEvery: opt.SaveEvery, logEvery: opt.LogEvery, log: opt.Log,
		stateDir: opt.StateDir}
	if opt.Steps > 0 {
		r.total = opt.Steps
	}
	if r.stateDir == "" {
		r.stateDir = opt.Out
	}
	if r.saveEvery <= 0 {
		r.saveEvery = 500
	}
	if r.logEvery <= 0 {
		r.logEvery = 50
	}
	if r.log == nil {
		r.log = io.Discard
	}
	r.sp = statePath(r.stateDir, spec.Name)
	var state *checkpoint.Checkpoint
	if opt.Resume { // a corrupt state is reported before the data are read
		var err error
		if state, err = checkpoint.Read(r.sp); err != nil {
			return nil, err
		}
	}
	need, err := r.newStore(ctx, state)
	if err != nil {
		return nil, err
	}
	rows, labels, err := TrainingData(dequantizes(spec))
	if err != nil {
		return nil, err
	}
	var lab []int
	if spec.Objective == models.DSM || spec.Objective == models.Classify {
		lab = labels
	}
	if r.tr, err = models.NewTrainer(backend, r.store, Schedule(), spec.Objective, rows, lab); err != nil {
		return nil, err
	}
	eps := ""
	if usesEps(spec) {
		if need == nil {
			need = opt.Needs["eps"]
		}
		if eps, err = epsDigest(opt.Out, need); err != nil {
			return nil, err
		}
	}
	if r.prov, err = trainProvenance(spec, eps); err != nil {
		return nil, err
	}
	r.rec = &TrainRecord{Net: spec.Name, Steps: r.total, Machine: Machine(), Backend: backend.Name()}
	if opt.Resume {
		if err := r.resume(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// newStore is the spec's store with the network it needs copied in and the
// skip fitted (or taken from the saved state); it returns the needed
// network's store (nil: none).
func (r *trainRun) newStore(ctx context.Context, state *checkpoint.Checkpoint) (*model.Store, error) {
	spec, opt := r.spec, r.opt
	r.store = models.NewStore()
	params := copyParams(spec.Params)
	params[models.ParamCosineSteps] = r.total
	r.store.SetParams(params)
	var need *model.Store
	if spec.Needs != "" {
		need = opt.Needs[spec.Needs]
		if need == nil {
			c, _, err := LoadNetwork(opt.Out, spec.Needs)
			if err != nil {
				return nil, fmt.Errorf("mnist: %s needs the %s network: %w", spec.Name, spec.Needs, err)
			}
			need = c
		}
		var err error
		if spec.Objective == models.DFTM { // t_θ reads its ε-network's mixture (trace skip), never its weights
			err = models.CopyMixtureSkip(r.store, need)
		} else {
			err = models.CopyTrainable(r.store, need)
		}
		if err != nil {
			return nil, err
		}
	}
	if spec.Skip != nil {
		if state != nil { // the fitted skip is in the saved state: no refit
			if err := restoreSkip(r.store, state); err != nil {
				return nil, fmt.Errorf("mnist: %s: %w", r.sp, err)
			}
		} else if err := fitSkip(ctx, r.store, spec, r.log); err != nil {
			return nil, err
		}
	}
	return need, nil
}

// resume loads the saved state and its training record.
func (r *trainRun) resume() error {
	if err := checkpoint.LoadTrainer(r.tr, r.prov, r.sp); err != nil {
		return err
	}
	if err := json.Unmarshal(r.tr.Config, r.rec); err != nil {
		return fmt.Errorf("mnist: %s: training record: %v: %w", r.sp, err, checkpoint.ErrInvalid)
	}
	if r.rec.Steps != r.total {
		return fmt.Errorf("mnist: %s was started for %d steps, this run asks for %d (give -steps %d): %w", r.sp, r.rec.Steps, r.total, r.rec.Steps,
			checkpoint.ErrInvalid)
	}
	fmt.Fprintf(r.log, "mnist: %s: resumed at step %d of %d\n", r.spec.Name, r.tr.Step(), r.total)
	return nil
}

// save writes the resumable state with the record so far.
func (r *trainRun) save() error {
	raw, err := json.Marshal(r.rec)
	if err != nil {
		return err
	}
	r.tr.Config = raw
	if err := os.MkdirAll(r.stateDir, 0o755); err != nil {
		return err
	}
	return checkpoint.SaveTrainer(r.tr, r.prov, r.sp)
}

// validate appends a validation point (ValidationELBO; ValidationBPD too
// with solve) to the record and logs it.
func (r *trainRun) validate(st int64, seconds float64, solve bool) error {
	t0 := time.Now()
	p := ValPoint{Step: st, Seconds: seconds}
	var err error
	if p.ELBO, err = ValidationELBO(r.backend, r.store); err != nil {
		return fmt.Errorf("mnist: validation at step %d: %w", st, err)
	}
	fmt.Fprintf(r.log, "mnist: %s: step %d: ELBO term %.4f ± %.4f bpd, gain over the skip %+.5f ± %.5f bpd (%s; %.1f s)\n",
		r.spec.Name, st, p.ELBO.Term, p.ELBO.TermSE, p.ELBO.Gain, p.ELBO.GainSE, ELBOProtocol(), time.Since(t0).Seconds())
	if solve {
		t0 = time.Now()
		if p.BPD, p.SE, err = ValidationBPD(r.backend, r.store); err != nil {
			return fmt.Errorf("mnist: validation at step %d: %w", st, err)
		}
		fmt.Fprintf(r.log, "mnist: %s: step %d: validation %.4f ± %.4f bpd (%s; %.1f s)\n", r.spec.Name, st, p.BPD, p.SE, ValidationProtocol(),
			time.Since(t0).Seconds())
	}
	r.rec.Val = append(r.rec.Val, p)
	return nil
}

// steps trains to the last step through models.Trainer.Run: progress,
// loss curve, validations and state saves; a cancelled ctx saves the state
// and returns its error.
func (r *trainRun) steps(ctx context.Context) error {
	tr, rec, total := r.tr, r.rec, int64(r.total)
	validating := r.opt.ValEvery > 0 && r.spec.Scope == models.ScoreScope
	if validating && tr.Step() == 0 { // the curve's start: the untrained network (with a skip: the mixture)
		if err := r.validate(0, 0, true); err != nil {
			return err
		}
	}
	base := rec.Seconds // training time of earlier runs
	loop := models.Loop{To: total, Label: "train " + r.spec.Name, Curve: &rec.Curve, CurveEvery: int64(r.logEvery)}
	if r.opt.Progress != nil {
		loop.Progress = r.opt.Progress
	}
	if r.opt.OnStep != nil {
		loop.Hooks = append(loop.Hooks, models.Hook{Every: 1, Run: func(s models.LoopState) error { r.opt.OnStep(s.Step); return nil }})
	}
	if validating {
		loop.Hooks = append(loop.Hooks, models.Hook{Every: int64(r.opt.ValEvery), AtEnd: true, Run: func(s models.LoopState) error {
			return r.validate(s.Step, base+s.Train.Seconds(), s.Step == total)
		}})
	}
	loop.Hooks = append(loop.Hooks, models.Hook{Every: int64(r.saveEvery), Run: func(s models.LoopState) error {
		if s.Step == total {
			return nil
		}
		rec.Seconds = base + s.Train.Seconds()
		return r.save()
	}})
	st, err := tr.Run(ctx, loop)
	rec.Seconds = base + st.Train.Seconds() // the time in training steps, validations excluded
	if err != nil && ctx.Err() != nil {
		if serr := r.save(); serr != nil {
			return serr
		}
		fmt.Fprintf(r.log, "mnist: %s interrupted at step %d; state in %s (resume with -resume)\n", r.spec.Name, tr.Step(), r.sp)
		return ctx.Err()
	}
	return err
}

// finish measures the classifier's accuracy (for the classifier), writes
// the weights checkpoint with its record and provenance, and removes the
// state.
func (r *trainRun) finish() (*TrainRecord, error) {
	spec, rec := r.spec, r.rec
	if spec.Objective == models.Classify {
		acc, err := testAccuracy(r.backend, r.store)
		if err != nil {
			return nil, err
		}
		rec.Accuracy = acc
		fmt.Fprintf(r.log, "mnist: classifier test accuracy %.2f%%\n", 100*acc)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	c, err := checkpoint.Weights(r.store, Dim, []string{spec.Scope}, raw)
	if err != nil {
		return nil, err
	}
	var sched schedule.Schedule
	if spec.Objective != models.Classify {
		sched = Schedule()
	}
	if err := checkpoint.Stamp(c, sched, r.prov); err != nil {
		return nil, err
	}
	c.Header.Producer = TrainProducer(spec.Name)
	if err := os.MkdirAll(r.opt.Out, 0o755); err != nil {
		return nil, err
	}
	out := weightsPath(r.opt.Out, spec.Name)
	if err := outfile.Check(out, checkpoint.ProducedBy(c.Header.Producer)); err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	if err := c.Write(out); err != nil {
		return nil, err
	}
	_ = os.Remove(r.sp) // finished: the state is no longer needed
	fmt.Fprintf(r.log, "mnist: %s: %d steps in %.0f s, final loss %.4g, wrote %s\n", spec.Name, r.total, rec.Seconds,
		rec.Curve.Loss[len(rec.Curve.Loss)-1], weightsPath(r.opt.Out, spec.Name))
	return rec, nil
}

// fitSkip fits spec.Skip to the dequantised training images (a fixed
// dequantisation, seed 1: the same mixture on every run and on resume),
// stores it as the network's skip and logs its exact test bpd on 1 000
// dequantised test images.
func fitSkip(ctx context.Context, store *model.Store, spec NetSpec, log io.Writer) error {
	g, err := FitMixtureContext(ctx, *spec.Skip)
	if err != nil {
		return err
	}
	if err := models.SetMixtureSkip(store, g); err != nil {
		return err
	}
	bpd, se, err := MixtureBPD(g, 1000)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "mnist: %s: skip mixture of %d Gaussians (rank %d): %.4f ± %.4f bpd on 1 000 dequantised test images (exact)\n",
		spec.Name, g.Components(), spec.Skip.Rank, bpd, se)
	return nil
}

// restoreSkip puts the mixture skip saved in a trainer state (its
// variables and parameters) into store, as fitSkip would have.
func restoreSkip(store *model.Store, state *checkpoint.Checkpoint) error {
	params, err := state.NewStoreFromParams()
	if err != nil {
		return err
	}
	for _, p := range []string{models.ParamSkip, models.ParamMixtureComponents, models.ParamMixtureRank} {
		v, ok := params.RootScope().GetParam(p)
		if !ok {
			return fmt.Errorf("the saved state has no mixture skip (parameter %s): %w", p, checkpoint.ErrInvalid)
		}
		store.SetParam(p, v)
	}
	n := 0
	for i, cv := range state.Header.Variables {
		if !strings.HasPrefix(cv.Path, "/"+models.MixtureScope+"/") {
			continue
		}
		v, err := store.CreateVariable(cv.Path, state.Values[i])
		if err != nil {
			return err
		}
		v.SetTrainable(false)
		n++
	}
	if n == 0 {
		return fmt.Errorf("the saved state has no mixture skip variables: %w", checkpoint.ErrInvalid)
	}
	return nil
}

func copyParams(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// testAccuracy is the classifier's EMA accuracy on the 10 000 test images.
func testAccuracy(backend compute.Backend, store *model.Store) (float64, error) {
	eval, err := models.EMAStore(store)
	if err != nil {
		return 0, err
	}
	cl, err := models.NewClassifier(backend, eval, Dim)
	if err != nil {
		return 0, err
	}
	set, err := Load(Test)
	if err != nil {
		return 0, err
	}
	x, err := set.Scaled(0, set.Images.N)
	if err != nil {
		return 0, err
	}
	labels := make([]int, len(set.Labels))
	for i, l := range set.Labels {
		labels[i] = int(l)
	}
	return cl.Accuracy(x, labels)
}
