package input

import (
	"bytes"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func checkParsed(t *testing.T, m *mat.Dense) {
	r, c := m.Dims()
	if r == 0 || c == 0 {
		t.Fatalf("parsed an empty %dx%d matrix", r, c)
	}
	for i := range r {
		for j := range c {
			if v := m.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value %v at %d,%d", v, i, j)
			}
		}
	}
}

// FuzzRead: no CSV input panics; whatever parses is a non-empty matrix of
// finite values that WriteCSV and ReadCSV reproduce bit for bit.
func FuzzRead(f *testing.F) {
	for _, s := range []string{"1,2\n3,4\n", "0.5\n", "1,,2\n", "\n\n1e308,-1e-308\n", "a,b\n", "1,2\n3\n", "\"1\",\"2\"\n", "NaN\n", "1;2\n", "\xef\xbb\xbf1,2\n", "", " \t\n# c\n1\r\n", "1,2,\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ReadCSV(bytes.NewReader(in), Options{})
		if err != nil {
			return
		}
		checkParsed(t, m)
		var buf bytes.Buffer
		if err := WriteCSV(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCSV(bytes.NewReader(buf.Bytes()), Options{})
		if err != nil {
			t.Fatalf("written matrix does not read back: %v", err)
		}
		if !mat.Equal(m, back) {
			t.Fatal("round trip changed the matrix")
		}
	})
}

// FuzzNPY: no .npy input panics or allocates beyond its bounds; whatever
// parses is a non-empty matrix of finite values that WriteNPY and ReadNPY
// reproduce bit for bit.
func FuzzNPY(f *testing.F) {
	f8 := make([]byte, 8*4)
	for _, b := range [][]byte{
		npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }\n", f8),
		npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", le32(1, 2, 3)),
		npyBytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", f8),
		npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", f8[:8]),
		npyBytes("{'shape': (4,), 'descr': '<f8', 'fortran_order': False}", f8),
		npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999, 99999999), }", f8),
		[]byte(npyMagic + "\x02\x00\x10\x00\x00\x00{'descr': '<f4'}"),
		[]byte(npyMagic),
		{},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ReadNPY(bytes.NewReader(in), Options{MaxBytes: 1 << 24})
		if err != nil {
			return
		}
		checkParsed(t, m)
		var buf bytes.Buffer
		if err := WriteNPY(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := ReadNPY(bytes.NewReader(buf.Bytes()), Options{})
		if err != nil || !mat.Equal(m, back) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
