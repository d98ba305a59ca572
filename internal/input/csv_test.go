package input

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func readString(s string, opt Options) (*mat.Dense, error) {
	return ReadCSV(strings.NewReader(s), opt)
}

func TestRoundTripKeepsEveryBit(t *testing.T) {
	m := mat.NewDense(2, 3, []float64{1, -2.5, 1e-300, 0.1, 1.0 / 3, 7})
	var buf bytes.Buffer
	if err := WriteCSV(&buf, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCSV(bytes.NewReader(buf.Bytes()), Options{})
	if err != nil || !mat.Equal(got, m) {
		t.Fatalf("round trip: %v %v", got, err)
	}
}

func TestCSVSkipsBlankWhitespaceAndCommentLinesOnly(t *testing.T) {
	m, err := readString("\xef\xbb\xbf1, 2\r\n\n   \t \n# comment, 3\n3,4\n  \n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, c := m.Dims(); r != 2 || c != 2 || m.At(1, 1) != 4 || m.At(0, 0) != 1 {
		t.Fatalf("got %v", mat.Formatted(m))
	}
	m, err = readString("x,y\n1,2\n", Options{Header: true})
	if err != nil || m.At(0, 1) != 2 {
		t.Fatalf("header: %v %v", m, err)
	}
}

func TestCSVNeverDropsARowAndNamesTheFileLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"0.5,abc\n1,2\n", `line 1, column 2: "abc" is not a number`},
		{"\xef\xbb\xbfx,y\n1,2\n", `line 1, column 1: "x" is not a number`},
		{"0,,0\n", "line 1, column 2: empty value"},
		{"1,2\n\n\n3\n", "line 4: 1 values, but line 1 has 2"},
		{"1,2\n\n# c\n3,NaN\n", `line 4, column 2: "NaN" is not a finite number`},
		{"1,2,\n", "line 1, column 3: empty value"},
		{"", "no data"},
		{"\n \n# only a comment\n", "no data"},
		{"1,Inf\n", "not a finite number"},
		{"1_0,2\n", `line 1, column 1: "1_0" is not a number`},
		{"0x1p-2\n", `"0x1p-2" is not a number`},
		{"1,0b11\n", `"0b11" is not a number`},
		{"1,.\n", `"." is not a number`},
		{"1,1e\n", `"1e" is not a number`},
		{"+infinity\n", "not a finite number"},
	} {
		_, err := readString(c.in, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "bad.csv")
	os.WriteFile(p, []byte("1,2\n\n3,x\n"), 0o644)
	if _, err := ReadFile(p, Options{}); err == nil || !strings.HasPrefix(err.Error(), p+": line 3, column 2") {
		t.Errorf("want file name and file line, got %v", err)
	}
}

func TestCSVReadsEveryPlainDecimal(t *testing.T) {
	m, err := readString("1,-2.5,+.5,5.,1e3,-1E-3,2.5e+2,007\n", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, -2.5, 0.5, 5, 1000, -0.001, 250, 7}
	for j, w := range want {
		if m.At(0, j) != w {
			t.Errorf("column %d: %g, want %g", j+1, m.At(0, j), w)
		}
	}
}

func TestCSVReadsRowsWiderThanAnyBuffer(t *testing.T) {
	const cols = 30000 // ≈ 200 KiB a line
	var b strings.Builder
	for i := 0; i < 3; i++ {
		for j := 0; j < cols; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(i*cols+j)/7, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	m, err := readString(b.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, c := m.Dims(); r != 3 || c != cols || m.At(2, cols-1) != float64(3*cols-1)/7 {
		t.Fatalf("got %d×%d, last %v", r, c, m.At(2, cols-1))
	}
}

func TestStdinIsReadWhenNamedDash(t *testing.T) {
	defer func(r any) { Stdin = r.(interface{ Read([]byte) (int, error) }) }(Stdin)
	Stdin = strings.NewReader("1,2\n3,4\n")
	m, err := ReadFile("-", Options{})
	if err != nil || m.At(1, 0) != 3 {
		t.Fatalf("%v %v", m, err)
	}
	var buf bytes.Buffer
	WriteNPY(&buf, m)
	Stdin = &buf
	if m2, err := ReadFile("-", Options{}); err != nil || !mat.Equal(m, m2) {
		t.Fatalf("npy on stdin: %v %v", m2, err)
	}
	Stdin = strings.NewReader("1,x\n")
	if _, err := ReadFile("-", Options{}); err == nil || !strings.HasPrefix(err.Error(), "stdin: line 1") {
		t.Fatalf("want a stdin error, got %v", err)
	}
}

func TestBudgetRefusesBeforeAllocating(t *testing.T) {
	_, err := readString("1,2\n3,4\n", Options{MaxBytes: 16})
	if err == nil || !strings.Contains(err.Error(), "memory budget") {
		t.Fatalf("got %v", err)
	}
}

// TestCSVPeakMemoryIsTheMatrix measures what a read allocates: the matrix
// plus a fixed buffer, far below 1.5× the matrix.
func TestCSVPeakMemoryIsTheMatrix(t *testing.T) {
	const rows, cols = 2000, 400 // 6.4 MB of float64
	p := filepath.Join(t.TempDir(), "m.csv")
	f, _ := os.Create(p)
	m := mat.NewDense(rows, cols, nil)
	for i := range rows {
		for j := range cols {
			m.Set(i, j, float64(i-j)/3)
		}
	}
	if err := WriteCSV(f, m); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := ReadFile(p, Options{})
	runtime.ReadMemStats(&after)
	if err != nil || !mat.Equal(got, m) {
		t.Fatalf("read back differs: %v", err)
	}
	matrix := float64(rows * cols * 8)
	ratio := float64(after.TotalAlloc-before.TotalAlloc) / matrix
	t.Logf("allocated %.3f× the %d×%d matrix (%.1f MB)", ratio, rows, cols, matrix/1e6)
	if ratio > 1.1 {
		t.Errorf("allocated %.2f× the matrix, want ≤ 1.1×", ratio)
	}
}
