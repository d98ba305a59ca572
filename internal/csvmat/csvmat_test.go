package csvmat

import (
	"bytes"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestRoundTripKeepsEveryBit(t *testing.T) {
	m := mat.NewDense(2, 3, []float64{1, -2.5, 1e-300, 0.1, 1.0 / 3, 7})
	var buf bytes.Buffer
	if err := Write(&buf, m); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(got, m) {
		t.Fatalf("round trip changed values: %v", mat.Formatted(got))
	}
}

func TestMalformedInputIsAnError(t *testing.T) {
	for _, in := range []string{"", "1,2\n3\n", "1,x\n", "NaN,1\n", "1,Inf\n", "\n\n"} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if m, err := Read(strings.NewReader("1, 2\n\n3,4\n")); err != nil || m.At(1, 1) != 4 {
		t.Errorf("spaces/blank lines: %v %v", m, err)
	}
}
