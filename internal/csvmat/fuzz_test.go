package csvmat

import (
	"bytes"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// FuzzRead: no input panics; whatever parses is a non-empty matrix of
// finite values that Write and Read reproduce bit for bit.
func FuzzRead(f *testing.F) {
	for _, s := range []string{"1,2\n3,4\n", "0.5\n", "1,,2\n", "\n\n1e308,-1e-308\n", "a,b\n", "1,2\n3\n", "\"1\",\"2\"\n", "NaN\n", "1;2\n", "\xef\xbb\xbf1,2\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := Read(bytes.NewReader(in))
		if err != nil {
			return
		}
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
		var buf bytes.Buffer
		if err := Write(&buf, m); err != nil {
			t.Fatal(err)
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatalf("written matrix does not read back: %v", err)
		}
		if !mat.Equal(m, back) {
			t.Fatal("round trip changed the matrix")
		}
	})
}
