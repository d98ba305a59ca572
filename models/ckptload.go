package models

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/support/exceptions"
)

// networksOf lists the networks an objective's training store holds.
func networksOf(obj Objective) []string {
	switch obj {
	case DFTM:
		return []string{TraceScope}
	case DFTMCentred:
		return []string{ScoreScope, CentredTraceScope}
	case Classify:
		return []string{ClassifierScope}
	}
	return []string{ScoreScope}
}

// NetworkShapes returns path → shape of every variable that the named
// networks (ScoreScope, TraceScope, CentredTraceScope) create under the
// hyperparameters of params for data dimension d, found by building their
// graphs once on a fresh store (nothing is executed).
func NetworkShapes(params *model.Store, d int, networks ...string) (map[string]shapes.Shape, error) {
	if d < 1 {
		return nil, fmt.Errorf("models: data dimension %d", d)
	}
	dt, err := DTypeOf(params)
	if err != nil {
		return nil, err
	}
	if err := checkParams(params); err != nil {
		return nil, err
	}
	fresh := model.NewStore()
	for p, v := range params.IterParams() {
		fresh.SetParam(p, v)
	}
	backend, err := NewBackend()
	if err != nil {
		return nil, err
	}
	k := model.GetRootParamOr(fresh, ParamNumClasses, 0)
	err = exceptions.TryCatch[error](func() {
		g := graph.NewGraph(backend, "shapes")
		model.SetStore(g, fresh)
		const b = 2
		in := Inputs{
			X:     graph.Parameter(g, "x", shapes.Make(dt, b, d)),
			Alpha: graph.Parameter(g, "alpha", shapes.Make(dt, b)),
			Sigma: graph.Parameter(g, "sigma", shapes.Make(dt, b)),
		}
		if k > 0 {
			in.Class = graph.Parameter(g, "class", shapes.Make(dtypes.Int32, b))
		}
		scope := fresh.RootScope()
		for _, n := range networks {
			switch n {
			case ScoreScope:
				Eps(scope, in) // the network and its mixture skip, if any
			case MixtureScope: // a fitted mixture on its own (MixtureCheckpoint)
				MixtureEps(scope, in)
			case TraceScope:
				TraceNet(scope, in)
			case CentredTraceScope:
				CentredTraceNet(scope, in)
			case ClassifierScope:
				ClassifierNet(scope, in.X)
			default:
				panic(fmt.Errorf("models: unknown network %q", n))
			}
		}
		g.Finalize()
	})
	if err != nil {
		return nil, fmt.Errorf("models: building the networks' graph: %w", err)
	}
	// A trace network with the trace skip reads the ε-network's mixture: the
	// mixture belongs to the ε-network (whose digest covers it, and which the
	// trace network's provenance names), so the trace network's own
	// variables, and its checkpoint, leave it out.
	ownsMixture := slices.Contains(networks, ScoreScope) || slices.Contains(networks, MixtureScope)
	out := map[string]shapes.Shape{}
	for v := range fresh.IterVariables() {
		if !ownsMixture && HasScope(v.Scope(), MixtureScope) {
			continue
		}
		out[v.Path()] = v.Shape()
	}
	return out, nil
}

// borrowsMixture reports whether one of nets is a trace network with the
// trace skip and none of them owns the mixture (the score network).
func borrowsMixture(store *model.Store, nets []string) bool {
	if slices.Contains(nets, ScoreScope) {
		return false
	}
	for _, n := range nets {
		if (n == TraceScope || n == CentredTraceScope) && model.GetParamOr(store.RootScope().At("%s", n), ParamTraceSkip, false) {
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
				want[EMAScope+p] = s
				want[adamScope+p+"_1st_moment"] = s
				want[adamScope+p+"_2nd_moment"] = s
			}
		}
	}
	under := func(p string) bool {
		for _, n := range networks {
			if strings.HasPrefix(p, "/"+n+"/") || strings.HasPrefix(p, EMAScope+"/"+n+"/") || strings.HasPrefix(p, adamScope+"/"+n+"/") {
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
				return fmt.Errorf("unexpected variable %s: %w", cv.Path, ErrCheckpoint)
			}
			continue
		}
		if !c.Values[i].Shape().Equal(s) {
			return fmt.Errorf("variable %s is %s, the network has %s: %w", cv.Path, c.Values[i].Shape(), s, ErrCheckpoint)
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
		return fmt.Errorf("%d expected variables missing (first %s): %w", len(missing), missing[0], ErrCheckpoint)
	}
	return nil
}

// stateScopes are where training state other than the networks lives:
// GoMLX's optimiser (moments, step, learning rate), the global step and the
// RNG state. Train-metric variables (under /metrics/, named with a random
// UUID by GoMLX) are not saved: they only smooth the displayed loss.
var stateScopes = []string{"/optimizers/", "/global_step", "/#rngState", "/AdamOptimizer/"}

// savedInTrainerCheckpoint excludes the train-metric variables.
func savedInTrainerCheckpoint(v *model.Variable) bool {
	return !strings.HasPrefix(v.Path(), "/metrics/")
}

// adamScope is where GoMLX's Adam keeps each variable's moments.
const adamScope = "/AdamOptimizer"

func isState(p string) bool {
	for _, s := range stateScopes {
		if strings.HasPrefix(p, s) || p == strings.TrimSuffix(s, "/") {
			return true
		}
	}
	return false
}

// Save writes the trainer's full state (every variable, optimiser moments,
// EMA and RNG state included, plus step and sampling stream) atomically to
// path, in the one checkpoint format.
func (tr *Trainer) Save(path string) error {
	c, err := CheckpointOf(tr.Store, KindTrainer, savedInTrainerCheckpoint)
	if err != nil {
		return err
	}
	c.Header.Objective, c.Header.Dim, c.Header.Step = tr.Objective.String(), tr.d, tr.step
	c.Header.Config = tr.Config
	c.Header.Networks = networksOf(tr.Objective)
	if c.Header.PCG, err = tr.pcg.MarshalBinary(); err != nil {
		return err
	}
	if c.Header.Provenance, err = tr.provenance(); err != nil {
		return err
	}
	if err := c.Write(path); err != nil {
		return fmt.Errorf("models: saving the trainer (is Trainer.Provenance set?): %w", err)
	}
	return nil
}

// provenance is what Save records: Trainer.Provenance with the trainer's
// schedule (none for a classifier) and parameterisation.
func (tr *Trainer) provenance() (*Provenance, error) {
	p := tr.Provenance
	params, err := encodeParams(tr.Store)
	if err != nil {
		return nil, err
	}
	p.Schedule, p.Param = nil, paramOf(params)
	if tr.Objective != Classify {
		if p.Schedule, err = SpecOf(tr.Schedule); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// Load restores a state written by Save into this trainer, which must have
// been built with the same hyperparameters, objective and data dimension.
// Every network variable must be present with its shape, no variable may be
// unknown, and nothing is changed unless the whole file checks out; errors
// wrap ErrCheckpoint.
func (tr *Trainer) Load(path string) error {
	c, err := ReadCheckpoint(path)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("models: checkpoint %s: %s: %w", path, fmt.Sprintf(format, args...), ErrCheckpoint)
	}
	h := c.Header
	if h.Kind != KindTrainer {
		return bad("kind %q holds no training state (want %q)", h.Kind, KindTrainer)
	}
	if h.Objective != tr.Objective.String() {
		return bad("objective %s, trainer has %s", h.Objective, tr.Objective)
	}
	if h.Dim != tr.d {
		return bad("data dimension %d, trainer has %d", h.Dim, tr.d)
	}
	if h.Provenance == nil {
		return bad("%v", ErrNoProvenance)
	}
	mineP, err := tr.provenance()
	if err != nil {
		return err
	}
	if err := SameTraining(c, &Checkpoint{Header: CheckpointHeader{Provenance: mineP}}); err != nil {
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
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(h.PCG); err != nil {
		return bad("sampling state: %v", err)
	}
	if err := setVariables(tr.Store, c); err != nil {
		return fmt.Errorf("models: checkpoint %s: %w", path, err)
	}
	*tr.pcg = *pcg
	tr.step = h.Step
	tr.Config = h.Config
	tr.GoMLX.ResetComputationGraphs()
	if tr.host != nil {
		return tr.host.reset()
	}
	return nil
}

// verifyTrainer checks a trainer checkpoint's variables against the
// networks its objective trains: every network variable with its shape, the
// EMA copies and Adam moments of the trained network, and nothing else but
// optimiser, step and RNG state.
func verifyTrainer(c *Checkpoint) error {
	h := c.Header
	obj, err := ParseObjective(h.Objective)
	if err != nil {
		return fmt.Errorf("%v: %w", err, ErrCheckpoint)
	}
	store, err := c.NewStoreFromParams()
	if err != nil {
		return err
	}
	nets := networksOf(obj)
	expected, err := NetworkShapes(store, h.Dim, nets...)
	if err != nil {
		return shapesErr("", err)
	}
	if borrowsMixture(store, nets) { // a trace network's state holds the mixture it was trained beside
		mix, err := NetworkShapes(store, h.Dim, MixtureScope)
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
		if _, ok := expected[cv.Path]; ok || strings.HasPrefix(cv.Path, EMAScope+"/") || isState(cv.Path) {
			continue
		}
		return fmt.Errorf("unexpected variable %s: %w", cv.Path, ErrCheckpoint)
	}
	if len(h.PCG) == 0 {
		return fmt.Errorf("no sampling-stream state: %w", ErrCheckpoint)
	}
	return nil
}

// Verify runs every check a load would on a decoded checkpoint: for
// "weights", exactly its networks' variables with their shapes and dtype;
// for "trainer", the checks of Trainer.Load that need no trainer.
func Verify(c *Checkpoint) error {
	if c.Header.Provenance == nil {
		return fmt.Errorf("models: %w: %w", ErrNoProvenance, ErrCheckpoint)
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
				return fmt.Errorf("variable %s is %s in the store, %s in the file: %w", cv.Path, v.Shape(), c.Values[i].Shape(), ErrCheckpoint)
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

// WeightsCheckpoint is the evaluation checkpoint of store's networks: for
// each network, the EMA values where the store has them (else the raw
// weights), under the networks' own paths; config is recorded as is.
func WeightsCheckpoint(store *model.Store, d int, networks []string, config []byte) (*Checkpoint, error) {
	eval, err := EMAStore(store)
	if err != nil {
		return nil, err
	}
	expected, err := NetworkShapes(store, d, networks...)
	if err != nil {
		return nil, err
	}
	c, err := CheckpointOf(eval, KindWeights, func(v *model.Variable) bool { _, ok := expected[v.Path()]; return ok })
	if err != nil {
		return nil, err
	}
	for i, cv := range c.Header.Variables {
		c.Header.Variables[i].Trainable = !strings.HasPrefix(cv.Path, "/"+MixtureScope+"/") // a skip is fitted, not trained
	}
	c.Header.Dim, c.Header.Networks, c.Header.Config = d, slices.Clone(networks), config
	if err := checkNetworkVariables(c, expected, networks, nil); err != nil {
		return nil, fmt.Errorf("models: store lacks network variables: %w", err)
	}
	return c, nil
}

// shapesErr is an error of NetworkShapes as the checkpoint's fault
// (ErrCheckpoint), except an unusable backend (ErrBackend), which is the
// environment's: it is returned as it is.
func shapesErr(prefix string, err error) error {
	if errors.Is(err, ErrBackend) {
		return err
	}
	return fmt.Errorf("%s%v: %w", prefix, err, ErrCheckpoint)
}

// LoadWeights reads a "weights" checkpoint (from a file, or decoded already
// with DecodeCheckpoint) into a new store holding its parameters and exactly
// the variables of its networks; anything missing, unexpected or misshapen
// is an error wrapping ErrCheckpoint.
func LoadWeights(c *Checkpoint) (*model.Store, error) {
	if c.Header.Kind != KindWeights {
		return nil, fmt.Errorf("models: checkpoint kind %q, want %q: %w", c.Header.Kind, KindWeights, ErrCheckpoint)
	}
	if len(c.Header.Networks) == 0 {
		return nil, fmt.Errorf("models: checkpoint names no network: %w", ErrCheckpoint)
	}
	if c.Header.Provenance == nil {
		return nil, fmt.Errorf("models: %w: %w", ErrNoProvenance, ErrCheckpoint)
	}
	store, err := c.NewStoreFromParams()
	if err != nil {
		return nil, err
	}
	expected, err := NetworkShapes(store, c.Header.Dim, c.Header.Networks...)
	if err != nil {
		return nil, shapesErr("models: checkpoint: ", err)
	}
	if err := checkNetworkVariables(c, expected, c.Header.Networks, nil); err != nil {
		return nil, fmt.Errorf("models: checkpoint: %w", err)
	}
	dt, _ := DTypeOf(store)
	for _, cv := range c.Header.Variables {
		if cv.DType != dt.String() {
			return nil, fmt.Errorf("models: checkpoint variable %s is %s, the network is %s: %w", cv.Path, cv.DType, dt, ErrCheckpoint)
		}
	}
	if err := setVariables(store, c); err != nil {
		return nil, err
	}
	return store, nil
}
