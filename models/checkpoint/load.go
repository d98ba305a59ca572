package checkpoint

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/models"
)

// networksOf lists the networks an objective's training store holds.
func networksOf(obj models.Objective) []string {
	switch obj {
	case models.DFTM:
		return []string{models.TraceScope}
	case models.DFTMCentred:
		return []string{models.ScoreScope, models.CentredTraceScope}
	case models.Classify:
		return []string{models.ClassifierScope}
	}
	return []string{models.ScoreScope}
}

// borrowsMixture reports whether one of nets is a trace network with the
// trace skip and none of them owns the mixture (the score network).
func borrowsMixture(store *model.Store, nets []string) bool {
	if slices.Contains(nets, models.ScoreScope) {
		return false
	}
	for _, n := range nets {
		if (n == models.TraceScope || n == models.CentredTraceScope) && model.GetParamOr(store.RootScope().At("%s", n), models.ParamTraceSkip, false) {
			return true
		}
	}
	return false
}

// checkNetworkVariables checks that the checkpoint holds exactly the
// network variables expected (no missing, unexpected or misshapen one)
// among those under the networks' scopes, and the EMA copies of the
// networks in emaNets (the trained ones), with their Adam moments.
func checkNetworkVariables(c *Checkpoint, expected map[string]shapes.Shape, networks, emaNets []string) error {
	want := maps.Clone(expected)
	for p, s := range expected {
		for _, n := range emaNets {
			if strings.HasPrefix(p, "/"+n+"/") {
				want[models.EMAScope+p] = s
				want[models.AdamScope+p+"_1st_moment"] = s
				want[models.AdamScope+p+"_2nd_moment"] = s
			}
		}
	}
	under := func(p string) bool {
		for _, n := range networks {
			if strings.HasPrefix(p, "/"+n+"/") || strings.HasPrefix(p, models.EMAScope+"/"+n+"/") || strings.HasPrefix(p, models.AdamScope+"/"+n+"/") {
				return true
			}
		}
		return false
	}
	got := map[string]bool{}
	for i, cv := range c.Header.Variables {
		s, ok := want[cv.Path]
		if !ok {
			if under(cv.Path) || c.Header.Kind == KindWeights {
				return fmt.Errorf("unexpected variable %s: %w", cv.Path, ErrInvalid)
			}
			continue
		}
		if !c.Values[i].Shape().Equal(s) {
			return fmt.Errorf("variable %s is %s, the network has %s: %w", cv.Path, c.Values[i].Shape(), s, ErrInvalid)
		}
		got[cv.Path] = true
	}
	var missing []string
	for p := range want {
		if !got[p] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("%d expected variables missing (first %s): %w", len(missing), missing[0], ErrInvalid)
	}
	return nil
}

// stateScopes are where training state other than the networks lives:
// GoMLX's optimiser (moments, step, learning rate), the global step and the
// RNG state. Train-metric variables (under /metrics/, named with a random
// UUID by GoMLX) are not saved: they only smooth the displayed loss.
var stateScopes = []string{"/optimizers/", "/global_step", "/#rngState", models.AdamScope + "/"}

// savedInTrainerCheckpoint excludes the train-metric variables.
func savedInTrainerCheckpoint(v *model.Variable) bool {
	return !strings.HasPrefix(v.Path(), "/metrics/")
}

func isState(p string) bool {
	for _, s := range stateScopes {
		if strings.HasPrefix(p, s) || p == strings.TrimSuffix(s, "/") {
			return true
		}
	}
	return false
}

// SaveTrainer writes the trainer's full state (every variable, optimiser
// moments, EMA and RNG state included, plus step, sampling stream and
// Config) atomically to path, with provenance p: the data, scaling,
// dequantisation and (t_θ, ν_θ) the ε-network digest, to which it adds the
// trainer's schedule and parameterisation.
func SaveTrainer(tr *models.Trainer, p Provenance, path string) error {
	c, err := Of(tr.Store, KindTrainer, savedInTrainerCheckpoint)
	if err != nil {
		return err
	}
	c.Header.Objective, c.Header.Dim, c.Header.Step = tr.Objective.String(), tr.Dim(), tr.Step()
	c.Header.Config = tr.Config
	c.Header.Networks = networksOf(tr.Objective)
	stream := tr.SamplingStream()
	if c.Header.PCG, err = stream.MarshalBinary(); err != nil {
		return err
	}
	if c.Header.Provenance, err = trainerProvenance(tr, p); err != nil {
		return err
	}
	if err := c.Write(path); err != nil {
		return fmt.Errorf("models: saving the trainer (is its provenance set?): %w", err)
	}
	return nil
}

// trainerProvenance is what SaveTrainer records: p with the trainer's
// schedule (none for a classifier) and parameterisation.
func trainerProvenance(tr *models.Trainer, p Provenance) (*Provenance, error) {
	params, err := encodeParams(tr.Store)
	if err != nil {
		return nil, err
	}
	p.Schedule, p.Param = nil, paramOf(params)
	if tr.Objective != models.Classify {
		if p.Schedule, err = SpecOf(tr.Schedule); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// LoadTrainer restores a state written by SaveTrainer into tr, which must
// have been built with the same hyperparameters, objective and data
// dimension, and trained on what p says (as SaveTrainer records it).
// Every network variable must be present with its shape, no variable may be
// unknown, and nothing is changed unless the whole file checks out; errors
// wrap ErrInvalid.
func LoadTrainer(tr *models.Trainer, p Provenance, path string) error {
	c, err := Read(path)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("models: checkpoint %s: %s: %w", path, fmt.Sprintf(format, args...), ErrInvalid)
	}
	h := c.Header
	if h.Kind != KindTrainer {
		return bad("kind %q holds no training state (want %q)", h.Kind, KindTrainer)
	}
	if h.Objective != tr.Objective.String() {
		return bad("objective %s, trainer has %s", h.Objective, tr.Objective)
	}
	if h.Dim != tr.Dim() {
		return bad("data dimension %d, trainer has %d", h.Dim, tr.Dim())
	}
	if h.Provenance == nil {
		return bad("%v", ErrNoProvenance)
	}
	mineP, err := trainerProvenance(tr, p)
	if err != nil {
		return err
	}
	if err := SameTraining(c, &Checkpoint{Header: Header{Provenance: mineP}}); err != nil {
		return fmt.Errorf("models: checkpoint %s: the saved state and this run: %w", path, err)
	}
	if !h.Provenance.Schedule.Equal(mineP.Schedule) || h.Provenance.EpsNetwork != mineP.EpsNetwork {
		return bad("the saved state was trained on schedule %v with ε-network %q, this run has %v with %q",
			h.Provenance.Schedule, h.Provenance.EpsNetwork, mineP.Schedule, mineP.EpsNetwork)
	}
	mine, err := encodeParams(tr.Store)
	if err != nil {
		return err
	}
	if err := sameParams(h.Params, mine); err != nil {
		return bad("%v", err)
	}
	if err := verifyTrainer(c); err != nil {
		return fmt.Errorf("models: checkpoint %s: %w", path, err)
	}
	var stream rand.PCG
	if err := stream.UnmarshalBinary(h.PCG); err != nil {
		return bad("sampling state: %v", err)
	}
	return tr.Resume(h.Step, stream, h.Config, func(store *model.Store) error {
		if err := setVariables(store, c); err != nil {
			return fmt.Errorf("models: checkpoint %s: %w", path, err)
		}
		return nil
	})
}

// verifyTrainer checks a trainer checkpoint's variables against the
// networks its objective trains: every network variable with its shape, the
// EMA copies and Adam moments of the trained network, and nothing else but
// optimiser, step and RNG state.
func verifyTrainer(c *Checkpoint) error {
	h := c.Header
	obj, err := models.ParseObjective(h.Objective)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrInvalid)
	}
	store, err := c.NewStoreFromParams()
	if err != nil {
		return err
	}
	nets := networksOf(obj)
	expected, err := models.NetworkShapes(store, h.Dim, nets...)
	if err != nil {
		return shapesErr("", err)
	}
	if borrowsMixture(store, nets) { // a trace network's state holds the mixture it was trained beside
		mix, err := models.NetworkShapes(store, h.Dim, models.MixtureScope)
		if err != nil {
			return shapesErr("", err)
		}
		maps.Copy(expected, mix)
	}
	var emaNets []string // the trained network has EMA copies and moments (a frozen score network has none)
	if h.Step > 0 {
		emaNets = nets[len(nets)-1:]
	}
	if err := checkNetworkVariables(c, expected, nets, emaNets); err != nil {
		return err
	}
	for _, cv := range h.Variables {
		if _, ok := expected[cv.Path]; ok || strings.HasPrefix(cv.Path, models.EMAScope+"/") || isState(cv.Path) {
			continue
		}
		return fmt.Errorf("unexpected variable %s: %w", cv.Path, ErrInvalid)
	}
	if len(h.PCG) == 0 {
		return fmt.Errorf("no sampling-stream state: %w", ErrInvalid)
	}
	return nil
}

// Verify runs every check a load would on a decoded checkpoint: for
// "weights", exactly its networks' variables with their shapes and dtype;
// for "trainer", the checks of LoadTrainer that need no trainer.
func Verify(c *Checkpoint) error {
	if c.Header.Provenance == nil {
		return fmt.Errorf("models: %w: %w", ErrNoProvenance, ErrInvalid)
	}
	if c.Header.Kind == KindTrainer {
		return verifyTrainer(c)
	}
	_, err := LoadWeights(c)
	return err
}

// setVariables creates or overwrites the checkpoint's variables in store.
func setVariables(store *model.Store, c *Checkpoint) error {
	for i, cv := range c.Header.Variables {
		v := store.GetVariable(cv.Path)
		if v == nil {
			var err error
			if v, err = store.CreateVariable(cv.Path, c.Values[i]); err != nil {
				return err
			}
		} else {
			if !v.Shape().Equal(c.Values[i].Shape()) {
				return fmt.Errorf("variable %s is %s in the store, %s in the file: %w", cv.Path, v.Shape(), c.Values[i].Shape(), ErrInvalid)
			}
			if err := v.SetValue(c.Values[i]); err != nil {
				return err
			}
		}
		v.SetTrainable(cv.Trainable)
	}
	return nil
}

func sameParams(file, mine map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if fv, ok := file[k]; !ok || fv != mine[k] {
			return fmt.Errorf("hyperparameter %s is %q in the file, %q in the model", k, fv, mine[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(file)) {
		if _, ok := mine[k]; !ok {
			return fmt.Errorf("hyperparameter %s=%q in the file is not set in the model", k, file[k])
		}
	}
	return nil
}

// Weights is the evaluation checkpoint of store's networks: for
// each network, the EMA values where the store has them (else the raw
// weights), under the networks' own paths; config is recorded as is.
func Weights(store *model.Store, d int, networks []string, config []byte) (*Checkpoint, error) {
	eval, err := models.EMAStore(store)
	if err != nil {
		return nil, err
	}
	expected, err := models.NetworkShapes(store, d, networks...)
	if err != nil {
		return nil, err
	}
	c, err := Of(eval, KindWeights, func(v *model.Variable) bool { _, ok := expected[v.Path()]; return ok })
	if err != nil {
		return nil, err
	}
	for i, cv := range c.Header.Variables {
		c.Header.Variables[i].Trainable = !strings.HasPrefix(cv.Path, "/"+models.MixtureScope+"/") // a skip is fitted, not trained
	}
	c.Header.Dim, c.Header.Networks, c.Header.Config = d, slices.Clone(networks), config
	if err := checkNetworkVariables(c, expected, networks, nil); err != nil {
		return nil, fmt.Errorf("models: store lacks network variables: %w", err)
	}
	return c, nil
}

// Mixture is a "weights" checkpoint holding the fitted mixture g alone
// (network models.MixtureScope, as models.SetMixtureSkip stores it, in
// float32 unless dtype says float64), labelled by class when numClasses > 0,
// with the caller's record config. Stamp it with its provenance before
// writing.
func Mixture(g *mixture.Gaussian, numClasses int, dtype string, config []byte) (*Checkpoint, error) {
	store := model.NewStore() // no network hyperparameters: there is no network
	store.SetParams(map[string]any{models.ParamDType: dtype, models.ParamNumClasses: numClasses})
	if err := models.SetMixtureSkip(store, g); err != nil {
		return nil, err
	}
	return Weights(store, g.Dim(), []string{models.MixtureScope}, config)
}

// shapesErr is an error of models.NetworkShapes as the checkpoint's fault
// (ErrInvalid), except an unusable backend (models.ErrBackend), which is the
// environment's: it is returned as it is.
func shapesErr(prefix string, err error) error {
	if errors.Is(err, models.ErrBackend) {
		return err
	}
	return fmt.Errorf("%s%v: %w", prefix, err, ErrInvalid)
}

// LoadWeights reads a "weights" checkpoint (from a file, or decoded already
// with Decode) into a new store holding its parameters and exactly
// the variables of its networks; anything missing, unexpected or misshapen
// is an error wrapping ErrInvalid.
func LoadWeights(c *Checkpoint) (*model.Store, error) {
	if c.Header.Kind != KindWeights {
		return nil, fmt.Errorf("models: checkpoint kind %q, want %q: %w", c.Header.Kind, KindWeights, ErrInvalid)
	}
	if len(c.Header.Networks) == 0 {
		return nil, fmt.Errorf("models: checkpoint names no network: %w", ErrInvalid)
	}
	if c.Header.Provenance == nil {
		return nil, fmt.Errorf("models: %w: %w", ErrNoProvenance, ErrInvalid)
	}
	store, err := c.NewStoreFromParams()
	if err != nil {
		return nil, err
	}
	expected, err := models.NetworkShapes(store, c.Header.Dim, c.Header.Networks...)
	if err != nil {
		return nil, shapesErr("models: checkpoint: ", err)
	}
	if err := checkNetworkVariables(c, expected, c.Header.Networks, nil); err != nil {
		return nil, fmt.Errorf("models: checkpoint: %w", err)
	}
	dt, _ := models.DTypeOf(store)
	for i, cv := range c.Header.Variables {
		if c.Values[i].DType().IsFloat() && cv.DType != dt.String() { // integers: an imported graph's shape constants
			return nil, fmt.Errorf("models: checkpoint variable %s is %s, the network is %s: %w", cv.Path, cv.DType, dt, ErrInvalid)
		}
	}
	if err := setVariables(store, c); err != nil {
		return nil, err
	}
	return store, nil
}
