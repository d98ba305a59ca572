package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// Provenance is what a checkpoint's networks were trained on: everything a
// user of the weights must match for them to mean what they meant in
// training. Format v3 requires it on every checkpoint; a v2 file decodes
// with a nil Provenance and every load refuses it (ErrNoProvenance).
type Provenance struct {
	// Schedule is the noise schedule of the diffusion networks (nil for a
	// clean-image classifier): name and every parameter, so that
	// schedule.New(Name, Params) rebuilds it exactly.
	Schedule *ScheduleSpec `json:",omitempty"`
	// Param is the output parameterisation (models.ParamParam: eps, y, v,
	// edm); "" for a classifier.
	Param string
	// Data names the training set ("mnist/train: 60000 IDX images",
	// "toys/checkerboard: n=5000 seed=1").
	Data string
	// Scaling is the map from the data set's values to the network's input
	// ("p/127.5 − 1: [0, 255] → [−1, 1]", "none").
	Scaling string
	// Dequantize is how discrete data were dequantised in training
	// ("none", or e.g. "uniform: 2(p + u)/256 − 1, u ~ U[0, 1)").
	Dequantize string
	// EpsNetwork is, for t_θ (df-tm) and ν_θ (df-tm-c), the NetworkDigest of
	// the ε-network they go with: for ν_θ the frozen one in its target, for
	// t_θ (whose target does not involve it) the one trained beside it and
	// validated with it. Empty for every other network.
	EpsNetwork string `json:",omitempty"`
	// ONNX is, for a score network imported from an ONNX file
	// (models.ArchONNX), the SHA-256 (hex) of that file; for t_θ and ν_θ
	// made for an imported ε-network, that network's file (optional). Empty
	// for every other network.
	ONNX string `json:",omitempty"`
}

// ScheduleSpec is a schedule by name and parameters (schedule.New's).
type ScheduleSpec struct {
	Name   string
	Params map[string]float64
}

// ErrNoProvenance is wrapped (with ErrInvalid) by loads of a checkpoint
// written before provenance was recorded (format v2).
var ErrNoProvenance = fmt.Errorf("checkpoint records no provenance (format v2, written before dfx recorded schedule, " +
	"data and ε-network): retrain it, or re-stamp it if you know what it was trained on (see checkpoint.Restamp)")

// SpecOf is the ScheduleSpec of s; only the continuous schedules of
// dfx/schedule (ve, vp, subvp, edm, linear) have one.
func SpecOf(s schedule.Schedule) (*ScheduleSpec, error) {
	var p map[string]float64
	switch v := s.(type) {
	case schedule.VE:
		p = map[string]float64{schedule.ParamSigmaMin: v.SigmaMin, schedule.ParamSigmaMax: v.SigmaMax, schedule.ParamTMin: v.TMin, schedule.ParamTMax: v.TMax}
	case schedule.VP:
		p = map[string]float64{schedule.ParamBetaMin: v.BetaMin, schedule.ParamBetaMax: v.BetaMax, schedule.ParamTMin: v.TMin, schedule.ParamTMax: v.TMax}
	case schedule.SubVP:
		p = map[string]float64{schedule.ParamBetaMin: v.BetaMin, schedule.ParamBetaMax: v.BetaMax, schedule.ParamTMin: v.TMin, schedule.ParamTMax: v.TMax}
	case schedule.EDM:
		p = map[string]float64{schedule.ParamTMin: v.TMin, schedule.ParamTMax: v.TMax}
	case schedule.Linear:
		p = map[string]float64{schedule.ParamTMin: v.TMin, schedule.ParamTMax: v.TMax}
	default:
		return nil, fmt.Errorf("models: schedule %v cannot be recorded in a checkpoint (want ve, vp, subvp, edm or linear)", s)
	}
	return &ScheduleSpec{Name: s.Name(), Params: p}, nil
}

// Schedule rebuilds the schedule.
func (s *ScheduleSpec) Schedule() (schedule.Schedule, error) {
	return schedule.New(s.Name, s.Params)
}

// String is the schedule as its own String method writes it.
func (s *ScheduleSpec) String() string {
	if s == nil {
		return "none"
	}
	if sc, err := s.Schedule(); err == nil {
		return fmt.Sprint(sc)
	}
	return s.Name + fmt.Sprint(s.Params)
}

// Equal reports whether both name the same schedule with the same parameters.
func (s *ScheduleSpec) Equal(o *ScheduleSpec) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.Name == o.Name && maps.Equal(s.Params, o.Params)
}

// maxProvenanceField bounds each provenance string.
const maxProvenanceField = 256

// check validates a decoded provenance against its checkpoint's header.
func (p *Provenance) check(h *Header) error {
	for name, v := range map[string]string{"Param": p.Param, "Data": p.Data, "Scaling": p.Scaling, "Dequantize": p.Dequantize} {
		if len(v) > maxProvenanceField || !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl) {
			return fmt.Errorf("provenance %s is not a short printable string", name)
		}
		if v == "" && name != "Param" {
			return fmt.Errorf("provenance %s is empty", name)
		}
	}
	// A classifier and a fitted mixture alone (q_0, for any schedule) need no schedule.
	diffusion := slices.ContainsFunc(h.Networks, func(n string) bool { return n != models.ClassifierScope && n != models.MixtureScope }) ||
		(h.Objective != "" && h.Objective != models.Classify.String())
	if p.Schedule == nil {
		if diffusion {
			return fmt.Errorf("provenance names no schedule for networks %v", h.Networks)
		}
	} else {
		if len(p.Schedule.Params) > 8 {
			return fmt.Errorf("provenance schedule has %d parameters", len(p.Schedule.Params))
		}
		if _, err := p.Schedule.Schedule(); err != nil {
			return fmt.Errorf("provenance schedule: %v", err)
		}
	}
	if want := paramOf(h.Params); p.Param != want {
		return fmt.Errorf("provenance parameterisation %q, the hyperparameters say %q", p.Param, want)
	}
	needsEps := slices.Contains(h.Networks, models.TraceScope) || slices.Contains(h.Networks, models.CentredTraceScope)
	switch {
	case needsEps && !isDigest(p.EpsNetwork):
		return fmt.Errorf("provenance ε-network %q is not a SHA-256 digest (t_θ and ν_θ must name the ε-network they go with)", p.EpsNetwork)
	case !needsEps && p.EpsNetwork != "":
		return fmt.Errorf("provenance names an ε-network for networks %v, which use none", h.Networks)
	}
	switch imported := importsONNX(h); {
	case imported && !isDigest(p.ONNX):
		return fmt.Errorf("provenance ONNX file digest %q is not a SHA-256 digest (an imported network names the file it came from)", p.ONNX)
	case !imported && p.ONNX != "" && (!needsEps || !isDigest(p.ONNX)):
		return fmt.Errorf("provenance names an ONNX file %q for networks that were not imported", p.ONNX)
	}
	return nil
}

// paramOf is the parameterisation a checkpoint's hyperparameters set, as
// models.Eps resolves it: the score network's own
// (/score/parameterisation) before the root's; "" for none (a classifier).
func paramOf(params map[string]string) string {
	v, ok := params["/"+models.ScoreScope+"/"+models.ParamParam]
	if !ok {
		v, ok = params["/"+models.ParamParam]
	}
	if !ok {
		return ""
	}
	s, _ := decodeParam(v)
	str, _ := s.(string)
	return str
}

// importsONNX reports whether the header's score network is an imported
// ONNX graph (models.ArchONNX).
func importsONNX(h *Header) bool {
	v, ok := h.Params["/"+models.ScoreScope+"/"+models.ParamArch]
	return ok && v == "string:"+models.ArchONNX && slices.Contains(h.Networks, models.ScoreScope)
}

func isDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// NetworkDigest identifies the network under scope in store by its
// function: SHA-256 over every variable under the scope (path, dtype,
// dimensions, raw bytes, in path order) and the hyperparameters other than
// the training-only ones. It does not change when a checkpoint is
// re-stamped, resaved or renamed, only when the network computes something
// else.
func NetworkDigest(store *model.Store, scope string) (string, error) {
	c, err := Of(store, KindWeights, func(v *model.Variable) bool { return digested(v.Path(), scope) })
	if err != nil {
		return "", err
	}
	return digestOf(c, scope)
}

// Digest is NetworkDigest of the network under scope stored in c.
func Digest(c *Checkpoint, scope string) (string, error) { return digestOf(c, scope) }

func digestOf(c *Checkpoint, scope string) (string, error) {
	h := sha256.New()
	word := func(s string) { _ = binary.Write(h, binary.LittleEndian, uint64(len(s))); h.Write([]byte(s)) }
	n := 0
	for i, cv := range c.Header.Variables {
		if !digested(cv.Path, scope) {
			continue
		}
		n++
		word(cv.Path)
		word(cv.DType)
		word(fmt.Sprint(cv.Dims))
		if err := c.Values[i].ConstBytes(func(b []byte) { word(string(b)) }); err != nil {
			return "", err
		}
	}
	if n == 0 {
		return "", fmt.Errorf("models: no variable under /%s to digest: %w", scope, ErrInvalid)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Header.Params)) {
		if !TrainingOnlyParams[k] {
			word(k + "=" + c.Header.Params[k])
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// digested reports whether the variable at path belongs to the network
// under scope: its own variables, and for the score network its mixture
// skip (models.SetMixtureSkip), which is part of what it computes.
func digested(path, scope string) bool {
	return strings.HasPrefix(path, "/"+scope+"/") || (scope == models.ScoreScope && strings.HasPrefix(path, "/"+models.MixtureScope+"/"))
}

// TrainingOnlyParams are the hyperparameters (by store path) that only
// steer training: networks that differ only in them compute the same thing.
var TrainingOnlyParams = map[string]bool{
	"/seed": true, "/learning_rate": true, "/batch_size": true, "/warmup_steps": true, "/cosine_steps": true,
	"/ema_decay": true, "/clip_norm": true, "/weight_decay": true, "/min_snr_gamma": true, "/weighting": true,
	"/time_sampling": true, "/cfg_dropout": true, "/shift_augment": true, "/dequantize": true,
}

// InitOnlyParams are the hyperparameters (by store path) that only steer
// how a network's weights start: trained networks that differ in them
// compute the same functions of their weights. They are part of the
// digests (unlike TrainingOnlyParams, which digests leave out), so that a
// digest recorded once stays valid.
var InitOnlyParams = map[string]bool{"/zero_bias": true}

// SameTraining checks that two checkpoints' networks were trained on the
// same schedule, data, scaling and dequantisation: networks that may be
// combined. Both must carry provenance.
func SameTraining(a, b *Checkpoint) error {
	if err := SameData(a, b); err != nil {
		return err
	}
	pa, pb := a.Header.Provenance, b.Header.Provenance
	switch {
	case pa.Scaling != pb.Scaling:
		return fmt.Errorf("models: networks trained on differently scaled data (%q and %q): %w", pa.Scaling, pb.Scaling, ErrInvalid)
	case pa.Dequantize != pb.Dequantize:
		return fmt.Errorf("models: networks trained with different dequantisation (%q and %q): %w", pa.Dequantize, pb.Dequantize, ErrInvalid)
	}
	return nil
}

// SameData checks that two checkpoints' networks were trained on the same
// images (and schedule, where both have one), whatever their scaling and
// dequantisation: a classifier of clean images beside a diffusion model of
// the dequantised ones (both in [−1, 1]).
func SameData(a, b *Checkpoint) error {
	pa, pb := a.Header.Provenance, b.Header.Provenance
	if pa == nil || pb == nil {
		return fmt.Errorf("models: %w: %w", ErrNoProvenance, ErrInvalid)
	}
	switch {
	case pa.Schedule != nil && pb.Schedule != nil && !pa.Schedule.Equal(pb.Schedule):
		return fmt.Errorf("models: networks trained on different schedules (%v and %v): %w", pa.Schedule, pb.Schedule, ErrInvalid)
	case pa.Data != pb.Data:
		return fmt.Errorf("models: networks trained on different data (%q and %q): %w", pa.Data, pb.Data, ErrInvalid)
	}
	return nil
}

// CheckPair checks that trace (holding t_θ or ν_θ) was made for the
// ε-network in eps: same training provenance, and trace's EpsNetwork equal
// to eps's digest. A mismatched pair is an error wrapping ErrInvalid.
func CheckPair(eps, trace *Checkpoint) error {
	if err := SameTraining(eps, trace); err != nil {
		return err
	}
	got, err := Digest(eps, models.ScoreScope)
	if err != nil {
		return err
	}
	if want := trace.Header.Provenance.EpsNetwork; want != got {
		return fmt.Errorf("models: the trace network was made for the ε-network %.12s…, this ε-network is %.12s… "+
			"(use the pair trained together): %w", want, got, ErrInvalid)
	}
	return nil
}

// CheckSchedule checks that c's networks were trained on s.
func CheckSchedule(c *Checkpoint, s schedule.Schedule) error {
	p := c.Header.Provenance
	if p == nil {
		return fmt.Errorf("models: %w: %w", ErrNoProvenance, ErrInvalid)
	}
	want, err := SpecOf(s)
	if err != nil {
		return err
	}
	if !p.Schedule.Equal(want) {
		return fmt.Errorf("models: networks trained on the %v schedule, used with %v: %w", p.Schedule, want, ErrInvalid)
	}
	return nil
}

// Stamp sets c's provenance to p with the schedule s (nil for a
// classifier) and the parameterisation that c's hyperparameters set.
func Stamp(c *Checkpoint, s schedule.Schedule, p Provenance) error {
	p.Schedule, p.Param = nil, paramOf(c.Header.Params)
	if s != nil {
		spec, err := SpecOf(s)
		if err != nil {
			return err
		}
		p.Schedule = spec
	}
	if err := p.check(&c.Header); err != nil {
		return fmt.Errorf("models: provenance: %v", err)
	}
	c.Header.Provenance = &p
	return nil
}

// Restamp rewrites the checkpoint raw (format v2 or v3) with provenance p
// (see Stamp) and nothing else changed: same header fields, same
// variables, byte for byte; the result is a v3 file. It is how the
// committed checkpoints, made before provenance was recorded, were given
// theirs without retraining.
func Restamp(raw []byte, name string, s schedule.Schedule, p Provenance) ([]byte, error) {
	c, err := Decode(raw, name)
	if err != nil {
		return nil, err
	}
	if err := Stamp(c, s, p); err != nil {
		return nil, fmt.Errorf("models: re-stamping %s: %w", name, err)
	}
	out, err := c.Encode()
	if err != nil {
		return nil, fmt.Errorf("models: re-stamping %s: %w", name, err)
	}
	again, err := Decode(out, name)
	if err != nil {
		return nil, fmt.Errorf("models: re-stamping %s: %w", name, err)
	}
	for i := range c.Values {
		a, _ := VariableDigest(c, i)
		b, _ := VariableDigest(again, i)
		if a != b {
			return nil, fmt.Errorf("models: re-stamping %s changed variable %s", name, c.Header.Variables[i].Path)
		}
	}
	return out, nil
}

// VariableDigest is the SHA-256 (hex) of variable i's raw bytes.
func VariableDigest(c *Checkpoint, i int) (string, error) {
	h := sha256.New()
	if err := c.Values[i].ConstBytes(func(b []byte) { h.Write(b) }); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
