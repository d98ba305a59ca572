package models

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"

	"os"
	"sort"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"

	"github.com/dfx-lab/dfx/internal/atomicfile"
)

// Checkpoint file layout (little-endian):
//
//	magic "DFXCKPT\x00" | uint32 version | uint32 header length H | H bytes JSON header |
//	variable data in header order | uint32 CRC-32 (IEEE) of everything before it.
//
// The header holds the hyperparameters, the trainer's step and sampling-stream
// state, and each variable's scope/name, dtype and dimensions. Every size read
// is bounded before allocation; the CRC and exact file length are checked
// before any variable is touched.
const (
	checkpointMagic   = "DFXCKPT\x00"
	checkpointVersion = 1
	maxHeaderBytes    = 16 << 20
	maxRank           = 8
)

// ErrCheckpoint is wrapped by every error about a corrupt or mismatched checkpoint.
var ErrCheckpoint = errors.New("bad checkpoint")

type ckptVariable struct {
	Scope, Name string
	DType       string
	Dims        []int
	Trainable   bool
}

type ckptHeader struct {
	Params    map[string]string
	Objective int
	Step      int64
	PCG       []byte
	Variables []ckptVariable
}

// paramsOf renders the context's hyperparameters as "type:value" strings.
func paramsOf(ctx *context.Context) map[string]string {
	out := map[string]string{}
	ctx.EnumerateParams(func(scope, key string, value any) {
		out[scope+"|"+key] = fmt.Sprintf("%T:%v", value, value)
	})
	return out
}

// Save writes the trainer's full state (every context variable, including
// optimiser moments, EMA and RNG state, plus step and sampling stream)
// atomically to path.
func (tr *Trainer) Save(path string) error {
	pcg, err := tr.pcg.MarshalBinary()
	if err != nil {
		return err
	}
	h := ckptHeader{Params: paramsOf(tr.Ctx), Objective: int(tr.Objective), Step: tr.step, PCG: pcg}
	var vars []*context.Variable
	for v := range tr.Ctx.IterVariables() {
		if !v.HasValue() {
			continue
		}
		vars = append(vars, v)
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].ScopeAndName() < vars[j].ScopeAndName() })
	var body bytes.Buffer
	for _, v := range vars {
		val, err := v.Value()
		if err != nil {
			return err
		}
		h.Variables = append(h.Variables, ckptVariable{v.Scope(), v.Name(), val.DType().String(), val.Shape().Dimensions, v.Trainable})
		if err := val.ConstBytes(func(b []byte) { body.Write(b) }); err != nil {
			return err
		}
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	_ = binary.Write(&buf, binary.LittleEndian, uint32(checkpointVersion))
	_ = binary.Write(&buf, binary.LittleEndian, uint32(len(hdr)))
	buf.Write(hdr)
	buf.Write(body.Bytes())
	_ = binary.Write(&buf, binary.LittleEndian, crc32.ChecksumIEEE(buf.Bytes()))
	return atomicfile.WriteFile(path, buf.Bytes())
}

// Load restores a state written by Save into this trainer, which must have
// been built with the same hyperparameters and objective; it returns an
// error wrapping ErrCheckpoint for a corrupt, truncated or mismatched file.
func (tr *Trainer) Load(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("models: checkpoint %s: %s: %w", path, fmt.Sprintf(format, args...), ErrCheckpoint)
	}
	const fixed = len(checkpointMagic) + 8
	if len(raw) < fixed+4 || string(raw[:len(checkpointMagic)]) != checkpointMagic {
		return bad("not a dfx checkpoint (bad magic or too short)")
	}
	if crc := binary.LittleEndian.Uint32(raw[len(raw)-4:]); crc != crc32.ChecksumIEEE(raw[:len(raw)-4]) {
		return bad("CRC mismatch (corrupt or truncated)")
	}
	if v := binary.LittleEndian.Uint32(raw[len(checkpointMagic):]); v != checkpointVersion {
		return bad("version %d, this build reads %d", v, checkpointVersion)
	}
	hlen := int64(binary.LittleEndian.Uint32(raw[len(checkpointMagic)+4:]))
	if hlen > maxHeaderBytes || int64(fixed)+hlen > int64(len(raw)-4) {
		return bad("header length %d out of bounds", hlen)
	}
	var h ckptHeader
	if err := json.Unmarshal(raw[fixed:fixed+int(hlen)], &h); err != nil {
		return bad("header: %v", err)
	}
	if h.Objective != int(tr.Objective) {
		return bad("objective %d, trainer has %d", h.Objective, tr.Objective)
	}
	if err := sameParams(h.Params, paramsOf(tr.Ctx)); err != nil {
		return bad("%v", err)
	}
	body := raw[fixed+int(hlen) : len(raw)-4]
	values := make([]*tensors.Tensor, len(h.Variables))
	for i, cv := range h.Variables {
		dt, err := dtypes.DTypeString(cv.DType)
		if err != nil || dt == dtypes.InvalidDType {
			return bad("variable %s/%s: dtype %q", cv.Scope, cv.Name, cv.DType)
		}
		if len(cv.Dims) > maxRank {
			return bad("variable %s/%s: rank %d", cv.Scope, cv.Name, len(cv.Dims))
		}
		size := int64(dt.Size())
		for _, d := range cv.Dims {
			if d < 0 || d > len(body) || size*int64(d) > int64(len(body)) {
				return bad("variable %s/%s: dims %v exceed the file", cv.Scope, cv.Name, cv.Dims)
			}
			size *= int64(d)
		}
		if size > int64(len(body)) {
			return bad("variable %s/%s: %d bytes, %d left", cv.Scope, cv.Name, size, len(body))
		}
		t := tensors.FromShape(shapes.Make(dt, cv.Dims...))
		if err := t.MutableBytes(func(b []byte) { copy(b, body[:size]) }); err != nil {
			return err
		}
		body = body[size:]
		values[i] = t
		if existing := tr.Ctx.InspectVariable(cv.Scope, cv.Name); existing != nil && existing.HasValue() {
			if !existing.Shape().Equal(t.Shape()) {
				return bad("variable %s/%s: shape %s, model has %s", cv.Scope, cv.Name, t.Shape(), existing.Shape())
			}
		}
	}
	if len(body) != 0 {
		return bad("%d trailing bytes", len(body))
	}
	pcg := new(rand.PCG)
	if err := pcg.UnmarshalBinary(h.PCG); err != nil {
		return bad("sampling state: %v", err)
	}
	for i, cv := range h.Variables {
		v := tr.Ctx.InspectVariable(cv.Scope, cv.Name)
		if v == nil {
			v = tr.Ctx.InAbsPath(cv.Scope).Checked(false).VariableWithValue(cv.Name, values[i])
		} else if err := v.SetValue(values[i]); err != nil {
			return err
		}
		v.SetTrainable(cv.Trainable)
	}
	*tr.pcg = *pcg
	tr.step = h.Step
	return nil
}

func sameParams(file, model map[string]string) error {
	for k, v := range model {
		if fv, ok := file[k]; !ok || fv != v {
			return fmt.Errorf("hyperparameter %s is %q in the file, %q in the model", k, fv, v)
		}
	}
	for k, v := range file {
		if _, ok := model[k]; !ok {
			return fmt.Errorf("hyperparameter %s=%q in the file is not set in the model", k, v)
		}
	}
	return nil
}
