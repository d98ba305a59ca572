// Package input reads the numeric matrices every dfx command takes: CSV
// (one row per line, comma-separated float64 values) or NumPy .npy files
// (float32/float64, little-endian, C order, 1-D or 2-D), chosen by the
// file's extension; "-" is standard input (a .npy stream is recognised by
// its magic bytes). Any other path must name a regular file (Open).
//
// CSV rules: blank and whitespace-only lines are skipped, so are lines whose
// first non-blank character is '#'; every other line is a row, and a row
// that does not parse is an error naming the file and its line number in
// the file (never silently dropped: there is no header guessing, a header
// line is skipped only when Options.Header asks for it). A UTF-8 byte-order
// mark is ignored. Rows may be of any width.
//
// Memory: a file is read twice — a first pass counts rows and checks widths
// without storing anything, then the matrix is allocated once and filled —
// so the peak is the matrix plus a 64 KiB buffer. Standard input that is not
// a regular file is first copied to an unlinked temporary file and read the
// same way.
package input

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/internal/membudget"
	"gonum.org/v1/gonum/mat"
)

// Limits bound what a reader accepts, so that a corrupt or hostile file
// cannot exhaust memory before the budget check.
const (
	MaxCells = 1 << 31 // 16 GiB of float64
	MaxCols  = 1 << 26
)

// Options tune a read.
type Options struct {
	// Header skips the first non-blank, non-comment CSV line.
	Header bool
	// MaxBytes, if positive, refuses a matrix whose float64 storage
	// exceeds it, before allocating.
	MaxBytes int64
}

// Stdin is what the name "-" reads (a variable so tests can replace it).
var Stdin io.Reader = os.Stdin

// StdinName is how errors name standard input.
const StdinName = "stdin"

// ReadFile reads the matrix at path ("-": standard input). Errors start
// with the file's name.
func ReadFile(path string, opt Options) (*mat.Dense, error) {
	if path == "" {
		return nil, fmt.Errorf("empty file name")
	}
	if path == "-" {
		return readStream(Stdin, StdinName, opt)
	}
	f, err := Open(path) // a regular file: a pipe is read as "-"
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decode(f, strings.EqualFold(filepath.Ext(path), ".npy"), path, opt)
}

// decode reads r as .npy (npy) or CSV; errors start with name.
func decode(r io.ReadSeeker, npy bool, name string, opt Options) (*mat.Dense, error) {
	read := ReadCSV
	if npy {
		read = ReadNPY
	}
	m, err := read(r, opt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// readStream reads a CSV or .npy stream (told apart by the .npy magic
// bytes), from a regular file where it is one, else from a spooled copy.
func readStream(in io.Reader, name string, opt Options) (*mat.Dense, error) {
	var rs io.ReadSeeker
	f, ok := in.(*os.File)
	if c, isCtx := in.(*ctxReader); isCtx {
		f, ok = c.file() // used directly only if a regular file, which never blocks
	}
	if ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if _, err := f.Seek(0, io.SeekCurrent); err == nil {
				rs = f
			}
		}
	}
	if rs == nil {
		tmp, err := spool(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer tmp.Close()
		rs = tmp
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	magic := make([]byte, len(npyMagic))
	n, _ := io.ReadFull(rs, magic)
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return decode(rs, bytes.Equal(magic[:n], []byte(npyMagic)), name, opt)
}

// spool copies r to a temporary file that is unlinked at once (so that
// nothing is left behind, however the process ends) and rewinds it.
func spool(r io.Reader) (*os.File, error) {
	f, err := os.CreateTemp("", "dfx-stdin-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name())
	if _, err := io.Copy(f, bufio.NewReaderSize(r, 1<<16)); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkSize applies the limits and the budget to an r×c matrix.
func checkSize(r, c int, opt Options) error {
	if r == 0 || c == 0 {
		return fmt.Errorf("no data")
	}
	if c > MaxCols {
		return fmt.Errorf("%d columns, more than the limit %d", c, MaxCols)
	}
	if int64(r) > MaxCells/int64(c) {
		return fmt.Errorf("%d×%d values, more than the limit %d", r, c, int64(MaxCells))
	}
	if need := int64(r) * int64(c) * 8; opt.MaxBytes > 0 && need > opt.MaxBytes {
		return fmt.Errorf("a %d×%d matrix needs %s, more than the memory budget %s", r, c, membudget.Format(float64(need)), membudget.Format(float64(opt.MaxBytes)))
	}
	return nil
}
