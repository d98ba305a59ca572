package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"

	"gonum.org/v1/gonum/mat"
)

// maxField bounds one CSV field: no number is longer, and a file without
// separators cannot make the reader buffer it whole.
const maxField = 1 << 16

var bom = []byte("\xef\xbb\xbf")

// ReadCSV reads a CSV matrix from r in two passes (see the package
// comment); errors name the line of the file.
func ReadCSV(r io.ReadSeeker, opt Options) (*mat.Dense, error) {
	start, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	rows, cols := 0, -1
	firstLine := 0
	err = walk(r, opt.Header, nil, func(line, n int) error {
		if cols < 0 {
			cols, firstLine = n, line
			if cols > MaxCols {
				return fmt.Errorf("line %d: %d values, more than the limit %d", line, n, MaxCols)
			}
		} else if n != cols {
			return fmt.Errorf("line %d: %d values, but line %d has %d", line, n, firstLine, cols)
		}
		rows++
		if int64(rows) > MaxCells/int64(max(cols, 1)) {
			return fmt.Errorf("line %d: more than %d values", line, int64(MaxCells))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := checkSize(rows, max(cols, 0), opt); err != nil {
		return nil, err
	}
	if _, err := r.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	data := make([]float64, rows*cols)
	i := 0
	changed := errors.New("the file changed between the two passes")
	err = walk(r, opt.Header, func(line, col int, f []byte) error {
		if i >= len(data) || col >= cols {
			return changed
		}
		v, err := parseField(f)
		if err != nil {
			return fmt.Errorf("line %d, column %d: %w", line, col+1, err)
		}
		data[i] = v
		i++
		return nil
	}, func(line, n int) error {
		if n != cols {
			return changed
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if i != len(data) {
		return nil, changed
	}
	return mat.NewDense(rows, cols, data), nil
}

func parseField(f []byte) (float64, error) {
	if len(f) == 0 {
		return 0, errors.New("empty value")
	}
	// ParseFloat copies the string into any error it returns, so viewing
	// the buffer without a copy is safe.
	v, err := strconv.ParseFloat(unsafe.String(&f[0], len(f)), 64)
	if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) && !plainDecimal(f) {
		// Go's own literals ("1_0", "0x1p-2") are not what another program
		// reading the same file would see.
		return 0, fmt.Errorf("%q is not a number (want a plain decimal such as -1.5 or 2e-3)", truncate(f))
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", truncate(f))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", truncate(f))
	}
	return v, nil
}

// plainDecimal reports whether f is [+-]digits[.digits][(e|E)[+-]digits]
// (digits on at least one side of the point): the syntax every CSV
// reader agrees on.
func plainDecimal(f []byte) bool {
	i, n := 0, len(f)
	digits := func() int {
		k := 0
		for i < n && f[i] >= '0' && f[i] <= '9' {
			i, k = i+1, k+1
		}
		return k
	}
	if i < n && (f[i] == '+' || f[i] == '-') {
		i++
	}
	m := digits()
	if i < n && f[i] == '.' {
		i++
		m += digits()
	}
	if m == 0 {
		return false
	}
	if i < n && (f[i] == 'e' || f[i] == 'E') {
		i++
		if i < n && (f[i] == '+' || f[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == n
}

func truncate(f []byte) string {
	if len(f) > 40 {
		return string(f[:40]) + "…"
	}
	return string(f)
}

// walk calls field for each value (trimmed of blanks) and endRow at the end
// of each row, with the line number in the file. Blank lines, comment lines
// and (if header) the first row are skipped. field may be nil.
func walk(r io.Reader, header bool, field func(line, col int, f []byte) error, endRow func(line, n int) error) error {
	s := fieldScanner{r: r, buf: make([]byte, 1<<16)}
	line, col := 1, 0
	skipLine := false
	for {
		f, term, err := s.next()
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if line == 1 && col == 0 {
			f = bytes.TrimPrefix(f, bom)
		}
		f = bytes.Trim(f, " \t\r\v\f")
		if col == 0 && !skipLine {
			switch {
			case term != ',' && len(f) == 0: // blank line
				skipLine = true
			case len(f) > 0 && f[0] == '#': // comment
				skipLine = true
			case header:
				header, skipLine = false, true
			}
		}
		if !skipLine {
			if field != nil {
				if err := field(line, col, f); err != nil {
					return err
				}
			}
			col++
		}
		if term == ',' {
			continue
		}
		if !skipLine {
			if err := endRow(line, col); err != nil {
				return err
			}
		}
		if term == 0 {
			return nil
		}
		line, col, skipLine = line+1, 0, false
	}
}

// fieldScanner splits its input at ',' and '\n' without holding more than
// one buffer and one field, whatever the length of a line.
type fieldScanner struct {
	r        io.Reader
	buf      []byte
	pos, end int
	err      error
	tok      []byte
}

// next returns the next field and its terminator: ',' or '\n', or 0 at the
// end of the input. The field is valid until the next call.
func (s *fieldScanner) next() ([]byte, byte, error) {
	s.tok = s.tok[:0]
	for {
		rest := s.buf[s.pos:s.end]
		if i := bytes.IndexAny(rest, ",\n"); i >= 0 {
			f := rest[:i]
			if len(s.tok) > 0 {
				s.tok = append(s.tok, f...)
				f = s.tok
			}
			s.pos += i + 1
			return f, rest[i], nil
		}
		if len(s.tok)+len(rest) > maxField {
			return nil, 0, fmt.Errorf("a value longer than %d bytes (not a number)", maxField)
		}
		s.tok = append(s.tok, rest...)
		s.pos = s.end
		if s.err != nil {
			if s.err == io.EOF {
				return s.tok, 0, nil
			}
			return nil, 0, s.err
		}
		n, err := s.r.Read(s.buf)
		s.pos, s.end, s.err = 0, n, err
	}
}
