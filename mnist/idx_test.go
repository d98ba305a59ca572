package mnist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"
)

func idx(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(data)
	return b.Bytes()
}

func TestForgedHeadersAreRejectedBeforeAllocating(t *testing.T) {
	img := func(n, r, c uint32, data int) []byte { return idx(idxImages, []uint32{n, r, c}, make([]byte, data)) }
	for name, raw := range map[string][]byte{
		"huge count":       img(0xffffffff, 28, 28, 10),
		"count over limit": img(MaxItems+1, 1, 1, 10),
		"huge side":        img(1, 1<<20, 1, 10),
		"zero images":      img(0, 28, 28, 0),
		"bytes over limit": img(MaxItems, MaxSide, MaxSide, 10),
		"truncated":        img(2, 2, 2, 7),
		"trailing bytes":   img(2, 2, 2, 9),
		"label magic":      idx(idxLabels, []uint32{1, 1, 1}, []byte{0}),
		"short header":     {0, 0, 8},
		"empty":            {},
	} {
		if _, err := DecodeImages(bytes.NewReader(raw)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, raw := range map[string][]byte{
		"not a digit": idx(idxLabels, []uint32{2}, []byte{3, 10}),
		"huge count":  idx(idxLabels, []uint32{0xfffffff0}, nil),
		"truncated":   idx(idxLabels, []uint32{3}, []byte{1}),
		"trailing":    idx(idxLabels, []uint32{1}, []byte{1, 2}),
	} {
		if _, err := DecodeLabels(bytes.NewReader(raw)); !errors.Is(err, ErrFormat) {
			t.Errorf("labels, %s: %v", name, err)
		}
	}
	im, err := DecodeImages(bytes.NewReader(img(2, 2, 2, 8)))
	if err != nil || im.N != 2 || im.Dim() != 4 {
		t.Errorf("valid file: %+v, %v", im, err)
	}
}

func TestTheShippedMNISTIsCanonical(t *testing.T) {
	train, err := Load(Train)
	if err != nil {
		t.Fatal(err)
	}
	test, err := Load(Test)
	if err != nil {
		t.Fatal(err)
	}
	if train.Images.N != 60000 || test.Images.N != 10000 || train.Images.Rows != 28 || train.Images.Cols != 28 {
		t.Fatalf("sizes %d, %d, %d×%d", train.Images.N, test.Images.N, train.Images.Rows, train.Images.Cols)
	}
	// Canonical facts: the first training labels are 5 0 4 1 9, the first test label is 7,
	// and the training set has 5923 zeros and 6742 ones.
	if string(train.Labels[:5]) != "\x05\x00\x04\x01\x09" || test.Labels[0] != 7 {
		t.Errorf("first labels %v, %v", train.Labels[:5], test.Labels[0])
	}
	var count [10]int
	for _, l := range train.Labels {
		count[l]++
	}
	if count[0] != 5923 || count[1] != 6742 {
		t.Errorf("label counts %v", count)
	}
	x, err := train.Scaled(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range x.RawMatrix().Data {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo != -1 || hi != 1 {
		t.Errorf("scaled range [%g, %g], want [-1, 1]", lo, hi)
	}
	dq, _ := train.Dequantized(0, 2, 1)
	dq2, _ := train.Dequantized(0, 2, 1)
	for i, v := range dq.RawMatrix().Data {
		p := float64(train.Images.Pixels[i])
		if v < 2*p/256-1 || v >= 2*(p+1)/256-1 || v != dq2.RawMatrix().Data[i] {
			t.Fatalf("dequantised pixel %d = %g for byte %g (or not reproducible)", i, v, p)
		}
	}
	if _, err := train.Scaled(59999, 2); err == nil {
		t.Error("rows past the end accepted")
	}
}

// stallReader returns its data, then (0, nil) for ever: a reader that never
// ends and never errs must not make a decode spin.
type stallReader struct{ data []byte }

func (s *stallReader) Read(b []byte) (int, error) {
	n := copy(b, s.data)
	s.data = s.data[n:]
	return n, nil
}

func TestIDXReaderWithoutProgressEnds(t *testing.T) {
	for name, raw := range map[string][]byte{
		"nothing":        nil,
		"header only":    idx(idxImages, []uint32{2, 2, 2}, nil),
		"short data":     idx(idxImages, []uint32{2, 2, 2}, make([]byte, 5)),
		"all the data":   idx(idxImages, []uint32{2, 2, 2}, make([]byte, 8)),
		"labels, all":    idx(idxLabels, []uint32{2}, []byte{1, 2}),
		"labels, header": idx(idxLabels, []uint32{2}, nil),
	} {
		done := make(chan error, 1)
		go func() {
			var err error
			if raw != nil && raw[3] == idxLabels&0xff {
				_, err = DecodeLabels(&stallReader{raw})
			} else {
				_, err = DecodeImages(&stallReader{raw})
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrFormat) {
				t.Errorf("%s: %v, want a format error", name, err)
			}
		case <-time.After(time.Minute): // a generous bound on a decode of a few bytes
			t.Fatalf("%s: decoding a reader that returns (0, nil) still runs after a minute", name)
		}
	}
}
