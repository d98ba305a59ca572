package input

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// npyBytes builds a version-1 .npy file from a header dictionary and data.
func npyBytes(dict string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(dict)))
	b.WriteString(dict)
	b.Write(data)
	return b.Bytes()
}

func le32(vs ...float32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, vs)
	return b.Bytes()
}

func TestNPYRoundTripAndFloat32And1D(t *testing.T) {
	m := mat.NewDense(2, 3, []float64{1, -2.5, 1e-300, 0.1, 1.0 / 3, 7})
	p := filepath.Join(t.TempDir(), "m.npy")
	f, _ := os.Create(p)
	if err := WriteNPY(f, m); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := ReadFile(p, Options{})
	if err != nil || !mat.Equal(got, m) {
		t.Fatalf("round trip: %v %v", got, err)
	}
	b := npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", le32(0.5, -1, 2))
	got, err = ReadNPY(bytes.NewReader(b), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, c := got.Dims(); r != 3 || c != 1 || got.At(1, 0) != -1 {
		t.Fatalf("1-D float32: %v", mat.Formatted(got))
	}
}

func TestNPYRejectsWhatItCannotRead(t *testing.T) {
	f8 := make([]byte, 8*4)
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"fortran", npyBytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", f8), "Fortran-order"},
		{"big-endian", npyBytes("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 2), }", f8), "not supported"},
		{"int", npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }", f8), "not supported"},
		{"object", npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (2, 2), }", f8), "not supported"},
		{"structured", npyBytes("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (4,), }", f8), "not a string"},
		{"3-D", npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1, 2), }", f8), "3-D"},
		{"short data", npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", f8), "needs 48 data bytes"},
		{"huge shape", npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999), }", f8), "shape entry"},
		{"over limit", npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2147483647, 2147483647), }", f8), "limit"},
		{"magic", []byte("XNUMPY\x01\x00\x00\x00"), "magic"},
		{"nan", npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", le32(float32(math.NaN()))), "not finite"},
		{"empty", npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 2), }", nil), "no data"},
	} {
		_, err := ReadNPY(bytes.NewReader(c.in), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
