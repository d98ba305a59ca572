package stats

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestMeanSE: the mean and √(s²/n) of a small sample by hand; NaN standard
// error below two values and NaN mean for none.
func TestMeanSE(t *testing.T) {
	m, se := MeanSE([]float64{1, 2, 3, 6})
	// mean 3, s² = (4 + 1 + 0 + 9)/3 = 14/3, se = √(14/12)
	if m != 3 || math.Abs(se-math.Sqrt(14.0/12)) > 1e-15 {
		t.Errorf("MeanSE = %g ± %g, want 3 ± %g", m, se, math.Sqrt(14.0/12))
	}
	if m, se := MeanSE([]float64{5}); m != 5 || !math.IsNaN(se) {
		t.Errorf("one value: %g ± %g, want 5 ± NaN", m, se)
	}
	if m, se := MeanSE(nil); !math.IsNaN(m) || !math.IsNaN(se) {
		t.Errorf("no values: %g ± %g", m, se)
	}
}

// TestMeanSD: the mean and s of a small sample by hand, √n times MeanSE's
// standard error; NaN below two values as in MeanSE.
func TestMeanSD(t *testing.T) {
	m, sd := MeanSD([]float64{1, 2, 3, 6})
	if m != 3 || math.Abs(sd-math.Sqrt(14.0/3)) > 1e-15 {
		t.Errorf("MeanSD = %g ± %g, want 3 ± %g", m, sd, math.Sqrt(14.0/3))
	}
	if m, sd := MeanSD([]float64{5}); m != 5 || !math.IsNaN(sd) {
		t.Errorf("one value: %g ± %g, want 5 ± NaN", m, sd)
	}
	if m, sd := MeanSD(nil); !math.IsNaN(m) || !math.IsNaN(sd) {
		t.Errorf("no values: %g ± %g", m, sd)
	}
}

// TestLogSumExp: exact on small values, no overflow on large ones, −Inf
// when every term is −Inf or there is none.
func TestLogSumExp(t *testing.T) {
	if got, want := LogSumExp([]float64{math.Log(1), math.Log(2), math.Log(3)}), math.Log(6); math.Abs(got-want) > 1e-15 {
		t.Errorf("log(1+2+3) = %g, want %g", got, want)
	}
	if got := LogSumExp([]float64{1000, 1000}); math.Abs(got-(1000+math.Ln2)) > 1e-12 {
		t.Errorf("log(2e^1000) = %g", got)
	}
	if got := LogSumExp([]float64{math.Inf(-1), math.Inf(-1)}); !math.IsInf(got, -1) {
		t.Errorf("all −Inf: %g", got)
	}
	if got := LogSumExp(nil); !math.IsInf(got, -1) {
		t.Errorf("empty: %g", got)
	}
}

// TestMedian: the middle value for an odd count, the mean of the two middle
// ones for an even count, whatever the order; the input keeps its order.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},        // (2 + 3)/2
		{[]float64{7, 7, 1, 100, 7, -5}, 7}, // sorted −5 1 7 7 7 100: (7 + 7)/2
		{[]float64{0.5, 10, -2, 4}, 2.25},   // sorted −2 0.5 4 10: (0.5 + 4)/2
		{[]float64{9}, 9},
		{nil, 0},
	} {
		in := append([]float64(nil), c.v...)
		if got := Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %g, want %g", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.v[i] {
				t.Errorf("Median reordered its input: %v", c.v)
				break
			}
		}
	}
}

// TestRanks: 1-based ranks, ties sharing the mean of their ranks.
func TestRanks(t *testing.T) {
	got := Ranks([]float64{10, 30, 20, 20, 5})
	want := []float64{2, 5, 3.5, 3.5, 1}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Ranks = %v, want %v", got, want)
		}
	}
}

// TestSpearman: ρ = 1 − 6Σd²/(n(n² − 1)) without ties (one swap of
// neighbours in five: Σd² = 2, ρ = 0.9; two swaps: Σd² = 4, ρ = 0.8), ±1 for
// monotone relations that are not linear, and with ties Pearson's r of the mean ranks: ranks (1, 2.5,
// 2.5, 4) against (1, 2, 3, 4) give 4.5/√(4.5·5).
func TestSpearman(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4, 5}, []float64{2, 1, 3, 4, 5}, 1 - 6*2.0/(5*24)},
		{[]float64{1, 2, 3, 4, 5}, []float64{2, 1, 4, 3, 5}, 0.8},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 8, 27, 64, 125}, 1},
		{[]float64{1, 2, 3, 4}, []float64{1, 0.5, 0.25, 0.125}, -1},
		{[]float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}, 4.5 / math.Sqrt(4.5*5)},
	} {
		if got := Spearman(c.a, c.b); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Spearman(%v, %v) = %.17g, want %.17g", c.a, c.b, got, c.want)
		}
	}
}

// TestMean: the index-order sum over n, NaN for no values.
func TestMean(t *testing.T) {
	if got := Mean([]float64{1, 2, 3, 6}); got != 3 {
		t.Errorf("Mean = %g, want 3", got)
	}
	if got := Mean(nil); !math.IsNaN(got) {
		t.Errorf("Mean(nil) = %g, want NaN", got)
	}
}

func TestNearestDistanceIsTheSmallestEuclideanDistance(t *testing.T) {
	y := mat.NewDense(3, 2, []float64{0, 0, 3, 4, -1, 1})
	x := mat.NewDense(2, 2, []float64{3, 5, 0.5, 0})
	got := NearestDistance(y, x)
	if want := []float64{1, 0.5}; math.Abs(got[0]-want[0]) > 1e-12 || math.Abs(got[1]-want[1]) > 1e-12 {
		t.Errorf("NearestDistance = %v, want %v", got, want)
	}
}
