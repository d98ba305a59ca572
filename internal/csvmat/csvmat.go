// Package csvmat reads and writes numeric CSV matrices: one row per line, no
// header, comma-separated float64 values.
package csvmat

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Limits bound what Read accepts, so that a corrupt or hostile file cannot
// exhaust memory.
const (
	MaxCells = 1 << 28 // 2 GiB of float64
	MaxCols  = 1 << 20
)

// ReadFile reads the matrix stored at path.
func ReadFile(path string) (*mat.Dense, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// Read parses a CSV matrix; every row must have the same number of values,
// each finite. Blank lines are skipped. An empty input is an error.
func Read(r io.Reader) (*mat.Dense, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = 0 // the first record sets the width
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var data []float64
	cols, rows := 0, 0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		if rows == 0 {
			cols = len(rec)
			if cols > MaxCols {
				return nil, fmt.Errorf("csv: %d columns, more than the limit %d", cols, MaxCols)
			}
		}
		if len(data)+cols > MaxCells {
			return nil, fmt.Errorf("csv: more than %d values", MaxCells)
		}
		for j, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil, fmt.Errorf("csv: line %d, column %d: %q is not a number", rows+1, j+1, s)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("csv: line %d, column %d: %v is not finite", rows+1, j+1, v)
			}
			data = append(data, v)
		}
		rows++
	}
	if rows == 0 || cols == 0 {
		return nil, fmt.Errorf("csv: no data")
	}
	return mat.NewDense(rows, cols, data), nil
}

// Write writes m as CSV with full float64 precision.
func Write(w io.Writer, m mat.Matrix) error {
	r, c := m.Dims()
	bw := bufio.NewWriter(w)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if j > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString(strconv.FormatFloat(m.At(i, j), 'g', -1, 64))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
