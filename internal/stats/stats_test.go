package stats

import (
	"math"
	"testing"
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
