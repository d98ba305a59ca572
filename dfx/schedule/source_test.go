package schedule

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestTableAnswersOnlyAtItsNodes(t *testing.T) {
	tb, err := NewTable("two", []Coefficients{{T: 0.1, Alpha: 1, Sigma: 0.5}, {T: 0.2, Alpha: 0.9, Sigma: 0.6}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tb.At(0.2 + 1e-12)
	if err != nil || c.Sigma != 0.6 {
		t.Errorf("At(0.2) = %+v, %v", c, err)
	}
	for _, tt := range []float64{0.15, 0.05, 0.3} {
		if _, err := tb.At(tt); !errors.Is(err, ErrTime) {
			t.Errorf("At(%g): got %v, want ErrTime", tt, err)
		}
	}
	if _, err := NewTable("bad", []Coefficients{{T: 0.2}, {T: 0.1}}); err == nil {
		t.Error("decreasing node times accepted")
	}
}

func TestContinuousSourceIsScheduleAt(t *testing.T) {
	s := DefaultVP()
	got, err := Continuous{s}.At(0.3)
	want, _ := At(s, 0.3)
	if err != nil || got != want {
		t.Errorf("Continuous.At = %+v, %v; want %+v", got, err, want)
	}
}

func TestPriorLogProbIsTheIsotropicGaussian(t *testing.T) {
	c := Prior(DefaultVE())
	if c.Sigma != 50 || c.T != 1 {
		t.Fatalf("prior coefficients %+v", c)
	}
	x := mat.NewDense(2, 3, []float64{1, 2, 3, -40, 0, 10})
	got := PriorLogProb(c, x)
	for i := 0; i < 2; i++ {
		want := 0.0
		for _, v := range x.RawRowView(i) {
			want += -0.5*math.Log(2*math.Pi*c.Sigma*c.Sigma) - v*v/(2*c.Sigma*c.Sigma)
		}
		if math.Abs(got[i]-want) > 1e-12*math.Abs(want) {
			t.Errorf("row %d: %g, want %g", i, got[i], want)
		}
	}
}

func TestSamplePriorHasTheScaleAndRepeatsWithTheSeed(t *testing.T) {
	c := Coefficients{Alpha: 1, Sigma: 3}
	a := SamplePrior(c, 4000, 2, rand.New(rand.NewPCG(1, 2)))
	b := SamplePrior(c, 4000, 2, rand.New(rand.NewPCG(1, 2)))
	if !mat.Equal(a, b) {
		t.Error("same seed, different points")
	}
	ss := 0.0
	for _, v := range a.RawMatrix().Data {
		ss += v * v
	}
	if sd := math.Sqrt(ss / 8000); math.Abs(sd-3) > 0.1 {
		t.Errorf("sample std %g, want 3", sd)
	}
}
