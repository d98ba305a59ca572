package input

import (
	"bufio"
	"io"
	"strconv"

	"gonum.org/v1/gonum/mat"
)

// WriteCSV writes m as CSV with full float64 precision: what ReadCSV reads
// back bit for bit.
func WriteCSV(w io.Writer, m mat.Matrix) error {
	r, c := m.Dims()
	bw := bufio.NewWriter(w)
	var num []byte
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if j > 0 {
				bw.WriteByte(',')
			}
			num = strconv.AppendFloat(num[:0], m.At(i, j), 'g', -1, 64)
			bw.Write(num)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
