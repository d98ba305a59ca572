package input

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

const (
	npyMagic = "\x93NUMPY"
	// maxNPYHeader bounds the header dictionary (NumPy itself refuses
	// headers over 10 000 bytes unless told otherwise).
	maxNPYHeader = 1 << 16
)

// ReadNPY reads a NumPy .npy array (format versions 1–3) of float32 or
// float64, little-endian, C order, 1-D (a column) or 2-D, from r, which
// must hold exactly the header and the data. Values must be finite.
func ReadNPY(r io.ReadSeeker, opt Options) (*mat.Dense, error) {
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	end, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 1<<16)
	h, hdrLen, err := readNPYHeader(br)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if err := checkSize(h.rows, h.cols, opt); err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	want := int64(h.rows) * int64(h.cols) * int64(h.size)
	if got := end - start - hdrLen; got != want {
		return nil, fmt.Errorf("npy: shape %v of %s needs %d data bytes, the file has %d", h.shape, h.descr, want, got)
	}
	data := make([]float64, h.rows*h.cols)
	var b [8]byte
	for i := range data {
		if _, err := io.ReadFull(br, b[:h.size]); err != nil {
			return nil, fmt.Errorf("npy: reading value %d: %w", i, err)
		}
		var v float64
		if h.size == 4 {
			v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[:4])))
		} else {
			v = math.Float64frombits(binary.LittleEndian.Uint64(b[:8]))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("npy: value %d (row %d, column %d) is %v, not finite", i, i/h.cols+1, i%h.cols+1, v)
		}
		data[i] = v
	}
	return mat.NewDense(h.rows, h.cols, data), nil
}

type npyHeader struct {
	descr      string
	size       int // bytes per value
	shape      []int
	rows, cols int
}

// readNPYHeader parses the magic, version, length and dictionary; it
// returns the header and its total length in bytes.
func readNPYHeader(r io.Reader) (npyHeader, int64, error) {
	var h npyHeader
	pre := make([]byte, len(npyMagic)+2)
	if _, err := io.ReadFull(r, pre); err != nil {
		return h, 0, errors.New("too short for a .npy file")
	}
	if string(pre[:len(npyMagic)]) != npyMagic {
		return h, 0, errors.New("not a .npy file (bad magic bytes)")
	}
	major := pre[len(npyMagic)]
	var n int64
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return h, 0, errors.New("truncated header length")
		}
		n = int64(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return h, 0, errors.New("truncated header length")
		}
		n = int64(binary.LittleEndian.Uint32(b[:]))
	default:
		return h, 0, fmt.Errorf("format version %d.%d not supported (1, 2 or 3)", major, pre[len(npyMagic)+1])
	}
	if n > maxNPYHeader {
		return h, 0, fmt.Errorf("header of %d bytes, more than the limit %d", n, maxNPYHeader)
	}
	dict := make([]byte, n)
	if _, err := io.ReadFull(r, dict); err != nil {
		return h, 0, errors.New("truncated header")
	}
	total := int64(len(pre)) + n + 2
	if major > 1 {
		total += 2
	}
	if err := h.parse(string(dict)); err != nil {
		return h, 0, err
	}
	return h, total, nil
}

// parse reads NumPy's header dictionary, e.g.
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }.
func (h *npyHeader) parse(s string) error {
	s = strings.TrimRight(s, " \n\x00")
	if i := strings.LastIndex(s, "}"); i >= 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "#") {
		s = s[:i+1] // a Python comment after the dictionary, as dfx's own files carry (NPYMarker)
	}
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return errors.New("header is not a dictionary")
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	seen := map[string]bool{}
	for s != "" {
		key, rest, ok := quoted(s)
		if !ok {
			return fmt.Errorf("header: bad key near %q", clip(s))
		}
		rest = strings.TrimSpace(rest)
		if !strings.HasPrefix(rest, ":") {
			return fmt.Errorf("header: missing ':' after %q", key)
		}
		rest = strings.TrimSpace(rest[1:])
		if seen[key] {
			return fmt.Errorf("header: key %q repeated", key)
		}
		seen[key] = true
		switch key {
		case "descr":
			v, r, ok := quoted(rest)
			if !ok {
				return errors.New("header: 'descr' is not a string (structured and object arrays are not supported)")
			}
			h.descr, rest = v, r
		case "fortran_order":
			switch {
			case strings.HasPrefix(rest, "False"):
				rest = rest[len("False"):]
			case strings.HasPrefix(rest, "True"):
				return errors.New("Fortran-order arrays are not supported: save with np.ascontiguousarray (C order)")
			default:
				return errors.New("header: 'fortran_order' is not True or False")
			}
		case "shape":
			var err error
			if h.shape, rest, err = parseShape(rest); err != nil {
				return err
			}
		default:
			return fmt.Errorf("header: unknown key %q", clip(key))
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, ",") {
			rest = strings.TrimSpace(rest[1:])
		} else if rest != "" {
			return fmt.Errorf("header: expected ',' near %q", clip(rest))
		}
		s = rest
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("header: no %q", k)
		}
	}
	return h.layout()
}

// parseShape reads the tuple at the start of rest, e.g. "(3, 2)", and
// returns its sizes and what follows it.
func parseShape(rest string) ([]int, string, error) {
	i := strings.IndexByte(rest, ')')
	if !strings.HasPrefix(rest, "(") || i < 0 {
		return nil, "", errors.New("header: 'shape' is not a tuple")
	}
	var shape []int
	for _, p := range strings.Split(rest[1:i], ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 || v > MaxCells {
			return nil, "", fmt.Errorf("header: shape entry %q is not a size in [0, %d]", clip(p), int64(MaxCells))
		}
		shape = append(shape, v)
	}
	if strings.TrimSpace(rest[1:i]) != "" && len(shape) == 0 {
		return nil, "", errors.New("header: bad shape")
	}
	return shape, rest[i+1:], nil
}

// layout sets the element size from the dtype and the rows and columns
// from the shape, refusing what this reader does not support.
func (h *npyHeader) layout() error {
	switch h.descr {
	case "<f8":
		h.size = 8
	case "<f4":
		h.size = 4
	default:
		return fmt.Errorf("dtype %q not supported (want little-endian float64 '<f8' or float32 '<f4')", clip(h.descr))
	}
	switch len(h.shape) {
	case 1:
		h.rows, h.cols = h.shape[0], 1
	case 2:
		h.rows, h.cols = h.shape[0], h.shape[1]
	default:
		return fmt.Errorf("a %d-D array; want 1-D (a column) or 2-D", len(h.shape))
	}
	return nil
}

// quoted reads a Python string literal in single or double quotes.
func quoted(s string) (v, rest string, ok bool) {
	if s == "" || (s[0] != '\'' && s[0] != '"') {
		return "", s, false
	}
	i := strings.IndexByte(s[1:], s[0])
	if i < 0 {
		return "", s, false
	}
	return s[1 : 1+i], s[i+2:], true
}

func clip(s string) string {
	if len(s) > 30 {
		return s[:30] + "…"
	}
	return s
}

// NPYMarker follows the header dictionary of every .npy file dfx writes, as
// a Python comment (NumPy parses the header with ast.literal_eval, which
// ignores it; readers that parse the header as JSON do not), so that dfx
// knows its own outputs (internal/outfile.NPYOwned).
const NPYMarker = "# written by dfx"

// WriteNPY writes m as a version-1 .npy array of little-endian float64,
// its header marked as dfx's (NPYMarker).
func WriteNPY(w io.Writer, m mat.Matrix) error {
	r, c := m.Dims()
	dict := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d, %d), } %s", r, c, NPYMarker)
	pad := 64 - (len(npyMagic)+4+len(dict)+1)%64
	dict += strings.Repeat(" ", pad%64) + "\n"
	bw := bufio.NewWriter(w)
	bw.WriteString(npyMagic)
	bw.Write([]byte{1, 0})
	binary.Write(bw, binary.LittleEndian, uint16(len(dict)))
	bw.WriteString(dict)
	var b [8]byte
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(m.At(i, j)))
			bw.Write(b[:])
		}
	}
	return bw.Flush()
}
