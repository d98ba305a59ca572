package mnist

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/atomicfile"
)

// Quantize8 rounds images in [−1, 1] to 8-bit pixels p = round(127.5 (x+1))
// (clipped to 0…255), as a PNG or an IDX file stores them.
func Quantize8(x *mat.Dense) []uint8 {
	raw := x.RawMatrix()
	out := make([]uint8, 0, raw.Rows*raw.Cols)
	for i := range raw.Rows {
		for _, v := range raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols] {
			out = append(out, uint8(math.Round(min(255, max(0, 127.5*(v+1))))))
		}
	}
	return out
}

// WriteImagesIDX writes 28×28 images x [B, 784] in [−1, 1] as an
// uncompressed IDX image file of 8-bit pixels (EncodeImagesIDX),
// atomically.
func WriteImagesIDX(path string, x *mat.Dense) error {
	raw, err := EncodeImagesIDX(x)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, raw)
}

// EncodeImagesIDX is the uncompressed IDX image file of 28×28 images x
// [B, 784] in [−1, 1], 8-bit pixels (Quantize8).
func EncodeImagesIDX(x *mat.Dense) ([]byte, error) {
	b, d := x.Dims()
	if d != Dim || b < 1 {
		return nil, fmt.Errorf("mnist: IDX of [%d, %d] images, want [B, %d]", b, d, Dim)
	}
	var buf bytes.Buffer
	for _, v := range []uint32{idxImages, uint32(b), 28, 28} {
		_ = binary.Write(&buf, binary.BigEndian, v)
	}
	buf.Write(Quantize8(x))
	return buf.Bytes(), nil
}

// FrameRMS is the rms intensity, in [0, 1] (black 0), of the 2-pixel frame
// of 28×28 images given in [−1, 1], clipped: a clean background is ≈ 0.
func FrameRMS(x *mat.Dense) float64 {
	n, _ := x.Dims()
	sum, cnt := 0.0, 0
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		for y := 0; y < 28; y++ {
			for c := 0; c < 28; c++ {
				if y >= 2 && y < 26 && c >= 2 && c < 26 {
					continue
				}
				v := (math.Max(-1, math.Min(1, row[y*28+c])) + 1) / 2
				sum += v * v
				cnt++
			}
		}
	}
	return math.Sqrt(sum / float64(cnt))
}
