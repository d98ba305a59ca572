package mnist

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// idxBytes is an IDX stream: magic, dimensions, data.
func idxBytes(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(data)
	return b.Bytes()
}

// FuzzDecodeIDX: no IDX image or label stream panics or allocates past
// the bounds; what decodes is exactly as large as its header declares, and
// labels are digits.
func FuzzDecodeIDX(f *testing.F) {
	f.Add(idxBytes(idxImages, []uint32{2, 2, 2}, make([]byte, 8)))
	f.Add(idxBytes(idxImages, []uint32{1, 28, 28}, make([]byte, 784)))
	f.Add(idxBytes(idxImages, []uint32{1, 32, 32}, make([]byte, 1024)))
	f.Add(idxBytes(idxImages, []uint32{1 << 30, 1 << 10, 1 << 10}, nil))
	f.Add(idxBytes(idxImages, []uint32{2, 2, 2}, make([]byte, 9)))
	f.Add(idxBytes(idxLabels, []uint32{3}, []byte{0, 9, 3}))
	f.Add(idxBytes(idxLabels, []uint32{2}, []byte{0, 10}))
	f.Add([]byte("\x00\x00\x08\x03\x00\x00"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if im, err := DecodeImages(bytes.NewReader(raw)); err == nil {
			if im.N < 1 || im.Rows < 1 || im.Cols < 1 || len(im.Pixels) != im.N*im.Dim() || len(raw) != 16+len(im.Pixels) {
				t.Fatalf("decoded %d×%d×%d images from %d bytes, %d pixels", im.N, im.Rows, im.Cols, len(raw), len(im.Pixels))
			}
		}
		if l, err := DecodeLabels(bytes.NewReader(raw)); err == nil {
			if len(l) < 1 || len(raw) != 8+len(l) {
				t.Fatalf("decoded %d labels from %d bytes", len(l), len(raw))
			}
			for _, v := range l {
				if v > 9 {
					t.Fatalf("label %d", v)
				}
			}
		}
	})
}
