package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/models"
)

// sizeParams are the hyperparameters that size a network's graph: each is
// a dimension of some variable the network stores (depth counts blocks,
// each with variables of its own), so a header whose value exceeds what
// the file holds is refused before any graph is built from it — a forged
// depth of 10 000 would otherwise build for minutes.
var sizeParams = map[string]bool{
	models.ParamWidth: true, models.ParamEmbedDim: true, models.ParamEmbedWidth: true, models.ParamNumClasses: true,
	models.ParamPatch: true, models.ParamPatchHalo: true, models.ParamMixtureComponents: true, models.ParamMixtureRank: true,
}

// checkSizes bounds the header's networks, data dimension and size
// hyperparameters by the variables it stores: networks listed once each,
// depth at most the number of variables, every other size (and Dim) at
// most the largest stored dimension. The mixture's sizes are bounded only
// where the file holds a mixture: a trace network's weights borrow the
// ε-network's (and build no more graph for it whatever K is).
func (h *Header) checkSizes() error {
	seen := map[string]bool{}
	for _, n := range h.Networks {
		if seen[n] {
			return fmt.Errorf("network %q listed twice", n)
		}
		seen[n] = true
	}
	maxDim, ownsMixture := 0, false
	for _, v := range h.Variables {
		for _, d := range v.Dims {
			maxDim = max(maxDim, d)
		}
		ownsMixture = ownsMixture || strings.Contains(v.Path+"/", "/"+models.MixtureScope+"/")
	}
	if h.Dim > maxDim && !importsONNX(h) { // an imported network's layout fixes its dimension (models.ONNXSpec)
		return fmt.Errorf("data dimension %d, but no stored variable has a dimension above %d", h.Dim, maxDim)
	}
	for p, s := range h.Params {
		name := path.Base(p)
		if name != models.ParamDepth && !sizeParams[name] {
			continue
		}
		v, err := decodeParam(s)
		n, isInt := v.(int)
		if err != nil || !isInt {
			continue // not a size: the network's own checks report it
		}
		mixture := name == models.ParamMixtureComponents || name == models.ParamMixtureRank
		switch {
		case n < 0:
			return fmt.Errorf("hyperparameter %s = %d, want ≥ 0", p, n)
		case name == models.ParamDepth && n > len(h.Variables):
			return fmt.Errorf("hyperparameter %s = %d, but the file stores only %d variables", p, n, len(h.Variables))
		case name != models.ParamDepth && n > maxDim && (!mixture || ownsMixture):
			return fmt.Errorf("hyperparameter %s = %d, but no stored variable has a dimension above %d", p, n, maxDim)
		}
	}
	return nil
}

// ReadBytes reads a checkpoint file's bytes for Decode. Only a regular
// file is opened (input.Open), and its size is checked before it is read
// whole: against MaxBytes, and against the header length its first bytes
// declare, so that a device, a named pipe or a file that is not a
// checkpoint is refused after reading at most 16 bytes. A missing file's error wraps fs.ErrNotExist.
func ReadBytes(path string) ([]byte, error) {
	f, err := input.Open(path)
	if err != nil {
		if errors.Is(err, input.ErrNotRegular) {
			return nil, fmt.Errorf("models: checkpoint %v: %w", err, ErrInvalid)
		}
		return nil, fmt.Errorf("models: checkpoint: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("models: checkpoint %s: %w", path, err)
	}
	size := st.Size()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("models: checkpoint %s: %s: %w", path, fmt.Sprintf(format, args...), ErrInvalid)
	}
	const fixed = len(checkpointMagic) + 8
	if size > MaxBytes {
		return nil, bad("%d bytes, larger than %d", size, MaxBytes)
	}
	if size < int64(fixed+checksumLen) {
		return nil, bad("not a dfx checkpoint (%d bytes, too short)", size)
	}
	raw := make([]byte, fixed)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, fmt.Errorf("models: checkpoint %s: %w", path, err)
	}
	if string(raw[:len(checkpointMagic)]) != checkpointMagic {
		return nil, bad("not a dfx checkpoint (bad magic)")
	}
	if hlen := int64(binary.LittleEndian.Uint32(raw[len(checkpointMagic)+4:])); hlen > MaxHeader || int64(fixed)+hlen+checksumLen > size {
		return nil, bad("header length %d out of bounds for a file of %d bytes", hlen, size)
	}
	// The file may have changed since the stat: read what it had, make sure
	// nothing follows, and let the checksum judge the bytes.
	raw = append(raw, make([]byte, size-int64(fixed))...)
	if _, err := io.ReadFull(f, raw[fixed:]); err != nil {
		return nil, bad("the file changed while it was read (%v)", err)
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, bad("the file changed while it was read (it grew)")
	}
	return raw, nil
}
