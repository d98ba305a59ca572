package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/models"
)

// The one checkpoint format of dfx (little-endian):
//
//	magic "DFXCKPT\x00" | uint32 version (3) | uint32 header length H |
//	H bytes of JSON header | variable data, in header order, raw little-endian |
//	32-byte SHA-256 of everything before it.
//
// The Header holds the kind ("trainer": every variable of a training run,
// optimiser moments, EMA and RNG state included, to resume exactly; "weights": the evaluation weights only), the hyperparameters, the
// objective, step and sampling-stream state, a free-form configuration and
// each variable's path, dtype, dimensions and trainability, and (from
// version 3) the networks' Provenance: schedule, parameterisation, data set,
// scaling, dequantisation and, for t_θ/ν_θ, the digest of their ε-network.
// Version 2 files (the same layout without Provenance) still decode, with a
// nil Provenance, so that `dfx ckpt` can say what they are and Restamp can
// upgrade them; every load (LoadWeights, LoadTrainer, Verify) refuses them
// with ErrNoProvenance. A v3 file without Provenance, or with a field that
// does not check out (Provenance.check), is corrupt.
//
// Reading is strict: the file length and checksum are verified before the
// header is parsed; the header is bounded (MaxHeader), parsed with
// unknown fields rejected; every dtype, rank and dimension is checked
// and sizes are accumulated without overflow against the bytes present;
// duplicate or malformed paths, trailing bytes and non-finite values are
// errors; so are a network listed twice and size hyperparameters (depth,
// width, …) beyond what the stored variables can hold (checkSizes), so no
// graph is ever built from a forged header. Every error wraps ErrInvalid.
const (
	checkpointMagic   = "DFXCKPT\x00"
	checkpointVersion = 3
	legacyVersion     = 2 // no Provenance: decoded, never loaded
	MaxHeader         = 16 << 20
	maxRank           = 8
	checksumLen       = sha256.Size
	// Checkpoint kinds.
	KindTrainer = "trainer"
	KindWeights = "weights"
)

// ErrInvalid is wrapped by every error about a corrupt or mismatched checkpoint.
var ErrInvalid = errors.New("bad checkpoint")

// Variable describes one stored variable.
type Variable struct {
	Path      string // absolute: "/score/input/weights"
	DType     string // "Float32", "Float64", "Int64", "Int32", "Uint64", "Uint32"
	Dims      []int
	Trainable bool
}

// Header is the JSON header of a checkpoint.
type Header struct {
	Kind      string
	Objective string   // "dsm", "df-tm", "df-tm-c", or "" for a bundle of networks
	Dim       int      // data dimension d the networks take
	Networks  []string // top-level scopes of the networks stored (models.ScoreScope, models.TraceScope, models.CentredTraceScope)
	Step      int64
	PCG       []byte            `json:",omitempty"` // sampling stream state (trainer)
	Params    map[string]string // store parameters by full path, as "type:value"
	Config    json.RawMessage   `json:",omitempty"` // the producer's own configuration (e.g. a loss curve)
	Variables []Variable
	// Provenance is what the networks were trained on (nil only in a
	// decoded version 2 file).
	Provenance *Provenance `json:",omitempty"`
	// Producer is the dfx command that wrote the file ("fit", "train eps"):
	// a command replaces an existing checkpoint only if it is its own
	// output (ProducedBy). Empty in files written before it was recorded,
	// and by library code.
	Producer string `json:",omitempty"`
}

// Version is the format version the checkpoint was decoded from (or will
// be written as).
func (c *Checkpoint) Version() int {
	if c.version == 0 {
		return checkpointVersion
	}
	return c.version
}

// Checkpoint is a decoded checkpoint: its header and one tensor per variable.
type Checkpoint struct {
	Header Header
	Values []*tensors.Tensor // in Header.Variables order

	version int // as decoded (0: not decoded)
}

// allowedDTypes are the dtypes a checkpoint may hold, by DType.String().
var allowedDTypes = func() map[string]dtypes.DType {
	m := map[string]dtypes.DType{}
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.Float64, dtypes.Int64, dtypes.Int32, dtypes.Uint64, dtypes.Uint32} {
		m[dt.String()] = dt
	}
	return m
}()

// encodeParams renders the store's parameters as "type:value" strings.
func encodeParams(store *model.Store) (map[string]string, error) {
	out := map[string]string{}
	for path, value := range store.IterParams() {
		switch v := value.(type) {
		case int:
			out[path] = "int:" + strconv.Itoa(v)
		case float64:
			out[path] = "float64:" + strconv.FormatFloat(v, 'g', -1, 64)
		case string:
			out[path] = "string:" + v
		case bool:
			out[path] = "bool:" + strconv.FormatBool(v)
		default:
			return nil, fmt.Errorf("models: parameter %s has type %T, which checkpoints do not store", path, value)
		}
	}
	return out, nil
}

// decodeParam is the inverse of one encodeParams entry.
func decodeParam(s string) (any, error) {
	typ, val, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("parameter value %q has no type", s)
	}
	switch typ {
	case "int":
		return strconv.Atoi(val)
	case "float64":
		return strconv.ParseFloat(val, 64)
	case "string":
		return val, nil
	case "bool":
		return strconv.ParseBool(val)
	}
	return nil, fmt.Errorf("parameter type %q", typ)
}

// NewStoreFromParams is a store holding the checkpoint's parameters (and no
// variables).
func (c *Checkpoint) NewStoreFromParams() (*model.Store, error) {
	store := model.NewStore()
	for path, s := range c.Header.Params {
		v, err := decodeParam(s)
		if err != nil {
			return nil, fmt.Errorf("models: checkpoint parameter %s: %v: %w", path, err, ErrInvalid)
		}
		store.SetParam(path, v)
	}
	return store, nil
}

// Of collects the variables of store (those with a value; keep selects a
// subset, nil for all) into a checkpoint of the given kind. Inference copies
// (models.IsInferenceCopy), derived from the others, are never written.
func Of(store *model.Store, kind string, keep func(*model.Variable) bool) (*Checkpoint, error) {
	params, err := encodeParams(store)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Header: Header{Kind: kind, Params: params}}
	var vars []*model.Variable
	for v := range store.IterVariables() {
		if v.HasValue() && !models.IsInferenceCopy(v) && (keep == nil || keep(v)) {
			vars = append(vars, v)
		}
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Path() < vars[j].Path() })
	for _, v := range vars {
		val, err := v.Value()
		if err != nil {
			return nil, err
		}
		c.Header.Variables = append(c.Header.Variables, Variable{v.Path(), val.DType().String(), slices.Clone(val.Shape().Dimensions), v.Trainable})
		c.Values = append(c.Values, val)
	}
	return c, nil
}

// Encode serialises the checkpoint.
func (c *Checkpoint) Encode() ([]byte, error) {
	if len(c.Values) != len(c.Header.Variables) {
		return nil, fmt.Errorf("models: checkpoint has %d values for %d variables", len(c.Values), len(c.Header.Variables))
	}
	if c.Header.Provenance == nil {
		return nil, fmt.Errorf("models: checkpoint records no provenance (schedule, data, ε-network): set Header.Provenance before writing")
	}
	if err := c.Header.Provenance.check(&c.Header); err != nil {
		return nil, fmt.Errorf("models: checkpoint: %v", err)
	}
	hdr, err := json.Marshal(c.Header)
	if err != nil {
		return nil, err
	}
	if len(hdr) > MaxHeader {
		return nil, fmt.Errorf("models: checkpoint header of %d bytes exceeds %d", len(hdr), MaxHeader)
	}
	return frame(hdr, checkpointVersion, c.Values, func(i int) string { return c.Header.Variables[i].Path })
}

// frame lays out a checkpoint file: the magic, the format version, the
// header's length and bytes, each variable's raw values, and the SHA-256 of
// all that; name(i) names variable i in errors.
func frame(hdr []byte, version uint32, values []*tensors.Tensor, name func(i int) string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	_ = binary.Write(&buf, binary.LittleEndian, version)
	_ = binary.Write(&buf, binary.LittleEndian, uint32(len(hdr)))
	buf.Write(hdr)
	for i, val := range values {
		if err := val.ConstBytes(func(b []byte) { buf.Write(b) }); err != nil {
			return nil, fmt.Errorf("models: checkpoint variable %s: %w", name(i), err)
		}
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	return buf.Bytes(), nil
}

// Write saves the checkpoint atomically to path.
func (c *Checkpoint) Write(path string) error {
	raw, err := c.Encode()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, raw)
}

// ProducedBy is the check that lets a command replace an existing file
// (internal/outfile.Owned): nil when path is a valid checkpoint whose
// Producer is producer.
func ProducedBy(producer string) func(path string) error {
	return func(path string) error {
		c, err := Read(path)
		if err != nil {
			return err
		}
		if c.Header.Producer != producer {
			if c.Header.Producer == "" {
				return fmt.Errorf("a checkpoint not written by dfx %s", producer)
			}
			return fmt.Errorf("a checkpoint written by dfx %s, not by dfx %s", c.Header.Producer, producer)
		}
		return nil
	}
}

// MaxBytes bounds what Read reads from a file.
const MaxBytes = 1 << 30

// Read reads and verifies a checkpoint file (see Decode
// and ReadBytes).
func Read(path string) (*Checkpoint, error) {
	raw, err := ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return Decode(raw, path)
}

// Decode verifies and decodes raw (name is used in errors).
func Decode(raw []byte, name string) (*Checkpoint, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("models: checkpoint %s: %s: %w", name, fmt.Sprintf(format, args...), ErrInvalid)
	}
	const fixed = len(checkpointMagic) + 8
	if len(raw) < fixed+checksumLen || string(raw[:len(checkpointMagic)]) != checkpointMagic {
		return nil, bad("not a dfx checkpoint (bad magic or too short)")
	}
	body, tail := raw[:len(raw)-checksumLen], raw[len(raw)-checksumLen:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], tail) {
		return nil, bad("checksum mismatch (corrupt or truncated)")
	}
	version := binary.LittleEndian.Uint32(raw[len(checkpointMagic):])
	if version != checkpointVersion && version != legacyVersion {
		return nil, bad("format version %d, this build reads %d (and %d without provenance)", version, checkpointVersion, legacyVersion)
	}
	hlen := int64(binary.LittleEndian.Uint32(raw[len(checkpointMagic)+4:]))
	if hlen > MaxHeader || int64(fixed)+hlen > int64(len(body)) {
		return nil, bad("header length %d out of bounds", hlen)
	}
	dec := json.NewDecoder(bytes.NewReader(raw[fixed : fixed+int(hlen)]))
	dec.DisallowUnknownFields()
	c := &Checkpoint{version: int(version)}
	if err := dec.Decode(&c.Header); err != nil {
		return nil, bad("header: %v", err)
	}
	if dec.More() {
		return nil, bad("header: data after the JSON object")
	}
	h := &c.Header
	if err := h.check(version); err != nil {
		return nil, bad("%v", err)
	}
	data := body[fixed+int(hlen):]
	seen := make(map[string]bool, len(h.Variables))
	for _, cv := range h.Variables {
		if seen[cv.Path] {
			return nil, bad("variable %s stored twice", cv.Path)
		}
		seen[cv.Path] = true
		t, size, err := cv.decode(data)
		if err != nil {
			return nil, bad("%v", err)
		}
		data = data[size:]
		c.Values = append(c.Values, t)
	}
	if len(data) != 0 {
		return nil, bad("%d bytes after the last variable", len(data))
	}
	if err := h.checkSizes(); err != nil {
		return nil, bad("%v", err)
	}
	return c, nil
}

// check reports the first inconsistency of a header of format version:
// kind, objective, dimensions, parameters, provenance.
func (h *Header) check(version uint32) error {
	if h.Kind != KindTrainer && h.Kind != KindWeights {
		return fmt.Errorf("kind %q, want %q or %q", h.Kind, KindTrainer, KindWeights)
	}
	if h.Objective != "" {
		if _, err := models.ParseObjective(h.Objective); err != nil {
			return err
		}
	}
	if h.Dim < 0 || h.Step < 0 {
		return fmt.Errorf("dim %d, step %d", h.Dim, h.Step)
	}
	for path, s := range h.Params {
		if _, err := decodeParam(s); err != nil {
			return fmt.Errorf("parameter %s: %v", path, err)
		}
	}
	switch {
	case version == legacyVersion && h.Provenance != nil:
		return fmt.Errorf("format version %d holds no provenance, this one does", version)
	case version == checkpointVersion && h.Provenance == nil:
		return fmt.Errorf("no provenance (schedule, data, ε-network), required from format version %d", checkpointVersion)
	case h.Provenance != nil:
		return h.Provenance.check(h)
	}
	return nil
}

// decode reads the variable's tensor from the front of data (the bytes
// left after the previous variables) and returns it and its size in bytes;
// an unknown dtype, a shape larger than data or a NaN or Inf is an error.
func (cv Variable) decode(data []byte) (*tensors.Tensor, int64, error) {
	if err := checkVariablePath(cv.Path); err != nil {
		return nil, 0, err
	}
	dt, ok := allowedDTypes[cv.DType]
	if !ok {
		return nil, 0, fmt.Errorf("variable %s: dtype %q", cv.Path, cv.DType)
	}
	if len(cv.Dims) > maxRank {
		return nil, 0, fmt.Errorf("variable %s: rank %d > %d", cv.Path, len(cv.Dims), maxRank)
	}
	size := int64(dt.Size())
	for _, d := range cv.Dims {
		if d < 0 || int64(d) > int64(len(data)) || size*int64(d) > int64(len(data)) {
			return nil, 0, fmt.Errorf("variable %s: dims %v exceed the %d bytes left", cv.Path, cv.Dims, len(data))
		}
		size *= int64(d)
	}
	if size > int64(len(data)) {
		return nil, 0, fmt.Errorf("variable %s: %d bytes, %d left", cv.Path, size, len(data))
	}
	t := tensors.FromShape(shapes.Make(dt, cv.Dims...))
	if err := t.MutableBytes(func(b []byte) { copy(b, data[:size]) }); err != nil {
		return nil, 0, fmt.Errorf("variable %s: %v", cv.Path, err)
	}
	if !finite(t) {
		return nil, 0, fmt.Errorf("variable %s holds NaN or Inf", cv.Path)
	}
	return t, size, nil
}

func checkVariablePath(p string) error {
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") || len(p) > 1024 {
		return fmt.Errorf("variable path %q is not an absolute /scope/name", p)
	}
	return nil
}

func finite(t *tensors.Tensor) bool {
	ok := true
	switch t.DType() {
	case dtypes.Float32:
		tensors.ConstFlatData(t, func(v []float32) {
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					ok = false
					return
				}
			}
		})
	case dtypes.Float64:
		tensors.ConstFlatData(t, func(v []float64) {
			for _, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					ok = false
					return
				}
			}
		})
	}
	return ok
}

// Variable returns the stored value of the variable at path, or nil.
func (c *Checkpoint) Variable(path string) *tensors.Tensor {
	for i, v := range c.Header.Variables {
		if v.Path == path {
			return c.Values[i]
		}
	}
	return nil
}

// ParamCount is the number of scalar values in trainable variables.
func (c *Checkpoint) ParamCount() int64 {
	var n int64
	for _, v := range c.Header.Variables {
		if !v.Trainable {
			continue
		}
		k := int64(1)
		for _, d := range v.Dims {
			k *= int64(d)
		}
		n += k
	}
	return n
}
