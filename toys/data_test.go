package toys

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func rawBytes(m *mat.Dense) []byte {
	var buf bytes.Buffer
	r, c := m.Dims()
	for i := 0; i < r; i++ {
		for _, v := range m.RawRowView(i)[:c] {
			_ = binary.Write(&buf, binary.LittleEndian, math.Float64bits(v))
		}
	}
	return buf.Bytes()
}

func TestSampleSameSeedGivesSameBytes(t *testing.T) {
	for _, name := range Names() {
		a, err := Sample(name, 500, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Sample(name, 500, 7)
		c, _ := Sample(name, 500, 8)
		if !bytes.Equal(rawBytes(a), rawBytes(b)) {
			t.Errorf("%s: same seed gave different bytes", name)
		}
		if bytes.Equal(rawBytes(a), rawBytes(c)) {
			t.Errorf("%s: seeds 7 and 8 gave the same bytes", name)
		}
	}
}

func TestSampleShapeIsNByTwoAndFinite(t *testing.T) {
	for _, name := range Names() {
		x, err := Sample(name, 321, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r, c := x.Dims(); r != 321 || c != 2 {
			t.Fatalf("%s: shape [%d, %d], want [321, 2]", name, r, c)
		}
		for _, v := range x.RawMatrix().Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: non-finite value %v", name, v)
			}
		}
	}
}

func TestCheckerboardPointsLieOnBlackSquaresAndFillAllEight(t *testing.T) {
	x, _ := Sample("checkerboard", 5000, 3)
	count := map[[2]int]int{}
	for i := 0; i < 5000; i++ {
		a, b := x.At(i, 0), x.At(i, 1)
		if !InCheckerboard(a, b) {
			t.Fatalf("point %d (%g, %g) is off the black squares", i, a, b)
		}
		count[[2]int{int(math.Floor(a / 2)), int(math.Floor(b / 2))}]++
	}
	if len(count) != 8 {
		t.Fatalf("%d squares occupied, want 8", len(count))
	}
	for sq, c := range count {
		if c < 5000/8-150 || c > 5000/8+150 { // ±6 standard deviations
			t.Errorf("square %v holds %d points, want ≈ %d", sq, c, 5000/8)
		}
	}
}

func TestInCheckerboardRejectsWhiteSquaresAndOutside(t *testing.T) {
	for _, p := range [][2]float64{{1, -1}, {-1, 1}, {3, 1}, {3, -3}, {-3, 3}, {-4.1, -3}, {4, 3}, {0.5, 4.5}} {
		if InCheckerboard(p[0], p[1]) {
			t.Errorf("(%g, %g) accepted", p[0], p[1])
		}
	}
	for _, p := range [][2]float64{{1, 1}, {-1, -1}, {3, 3}, {-3, -3}, {3, -1}, {-4, -4}} {
		if !InCheckerboard(p[0], p[1]) {
			t.Errorf("(%g, %g) rejected", p[0], p[1])
		}
	}
}

func TestGeneratorsStayOnTheirSupport(t *testing.T) {
	const n = 4000
	eg, _ := Sample("8gaussians", n, 2)
	rg, _ := Sample("rings", n, 2)
	sr, _ := Sample("swissroll", n, 2)
	mo, _ := Sample("moons", n, 2)
	for i := 0; i < n; i++ {
		// 8 Gaussians: within 6 std (0.354) of the radius-2.83 circle, near one of 8 angles
		r := math.Hypot(eg.At(i, 0), eg.At(i, 1))
		if math.Abs(r-4/math.Sqrt2) > 6*0.5/math.Sqrt2 {
			t.Fatalf("8gaussians: radius %g", r)
		}
		// rings: within 6·0.08·√2 of one of the radii 0.75k
		r = math.Hypot(rg.At(i, 0), rg.At(i, 1))
		k := math.Round(r / 0.75)
		if k < 1 || k > 4 || math.Abs(r-0.75*k) > 0.7 {
			t.Fatalf("rings: radius %g", r)
		}
		// swiss roll: |u| ≤ 4.5π plus noise, divided by 5
		if math.Hypot(sr.At(i, 0), sr.At(i, 1)) > (4.5*math.Pi+6)/5 {
			t.Fatalf("swissroll: point (%g, %g) too far", sr.At(i, 0), sr.At(i, 1))
		}
		// moons: inside [−3.6, 3.6] × [−2.6, 2.6] (2·(range ± 6·0.1))
		if math.Abs(mo.At(i, 0)) > 3.6 || math.Abs(mo.At(i, 1)) > 2.6 {
			t.Fatalf("moons: point (%g, %g)", mo.At(i, 0), mo.At(i, 1))
		}
	}
	// the two moons are balanced: mean 2·(½, ¼) + (−1, −0.2) = (0, 0.3)
	var mean [2]float64
	for i := 0; i < n; i++ {
		mean[0] += mo.At(i, 0) / n
		mean[1] += mo.At(i, 1) / n
	}
	if math.Abs(mean[0]) > 0.15 || math.Abs(mean[1]-0.3) > 0.15 {
		t.Errorf("moons: mean %v, want ≈ (0, 0.3)", mean)
	}
}

func TestSampleRejectsUnknownNameAndEmptySize(t *testing.T) {
	if _, err := Sample("spiral", 10, 1); err == nil {
		t.Error("unknown name accepted")
	}
	if _, err := Sample("moons", 0, 1); err == nil {
		t.Error("n = 0 accepted")
	}
}
