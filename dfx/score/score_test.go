package score

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range r {
		for j := range c {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	return m
}

func maxDiff(a, b *mat.Dense) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return mat.Norm(&d, math.Inf(1))
}

// TestTweedieConversionsAreOneQuantity: from a noise prediction ε̂, the
// score is −ε̂/σ and the denoiser ȳ satisfies x = α ȳ + σ ε̂; every
// conversion between the three, each written once, returns the start (a
// wrong sign or power of σ or α in any of them fails a round trip).
func TestTweedieConversionsAreOneQuantity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c, err := schedule.At(schedule.DefaultVP(), 0.4)
	if err != nil {
		t.Fatal(err)
	}
	x, eps := randDense(rng, 3, 4), randDense(rng, 3, 4)
	var s, y, e2, s2, y2, e3 mat.Dense
	ScoreFromEps(&s, c, eps)
	DenoiserFromEps(&y, c, x, eps)
	EpsFromScore(&e2, c, &s)
	ScoreFromDenoiser(&s2, c, x, &y)
	DenoiserFromScore(&y2, c, x, &s)
	EpsFromDenoiser(&e3, c, x, &y)
	for name, p := range map[string][2]*mat.Dense{
		"ε from score": {&e2, eps}, "score from denoiser": {&s2, &s},
		"denoiser from score": {&y2, &y}, "ε from denoiser": {&e3, eps},
	} {
		if d := maxDiff(p[0], p[1]); d > 1e-12 {
			t.Errorf("%s: off by %g", name, d)
		}
	}
	for i := range 3 {
		for j := range 4 {
			if d := x.At(i, j) - (c.Alpha*y.At(i, j) + c.Sigma*eps.At(i, j)); math.Abs(d) > 1e-12 {
				t.Fatalf("x ≠ α ȳ + σ ε at (%d, %d): %g", i, j, d)
			}
		}
	}
	if d := s.At(1, 2) + eps.At(1, 2)/c.Sigma; math.Abs(d) > 1e-12 {
		t.Errorf("score ≠ −ε/σ: %g", d)
	}
}

// TestFillAndExactAgreeWithTheMixture: the exact model's parameterisations,
// asked together or filled from one, equal the mixture's own score and
// denoiser; Check refuses a wrong trace length.
func TestFillAndExactAgreeWithTheMixture(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, err := mixture.NewDirac(randDense(rng, 5, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := schedule.At(schedule.DefaultVE(), 0.3)
	x := randDense(rng, 4, 3)
	r, err := m.Eval(mixture.Query{At: c, X: x, Want: mixture.Score | mixture.Denoiser | mixture.Trace})
	if err != nil {
		t.Fatal(err)
	}
	ex := Exact{Mixture: m}
	all, err := ex.Eval(c, x, WantScore|WantEps|WantDenoiser|WantTrace)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(all.Denoiser, r.Denoiser); d > 1e-12 {
		t.Errorf("denoiser off by %g", d)
	}
	filled := &Eval{Eps: all.Eps}
	if err := filled.Fill(c, x, WantScore|WantDenoiser); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(filled.Score, r.Score); d > 1e-9 {
		t.Errorf("score from ε off by %g", d)
	}
	if d := maxDiff(filled.Denoiser, r.Denoiser); d > 1e-9 {
		t.Errorf("denoiser from ε off by %g", d)
	}
	tr, err := ex.Trace(c, x)
	if err != nil || tr[2] != r.Trace[2] {
		t.Errorf("trace %v, want %v (%v)", tr, r.Trace, err)
	}
	if err := all.Check(4, 3, WantTrace); err != nil {
		t.Error(err)
	}
	all.Trace = all.Trace[:3]
	if err := all.Check(4, 3, WantTrace); err == nil {
		t.Error("3 traces for 4 points accepted")
	}
	if err := (&Eval{}).Fill(c, x, WantScore); err == nil {
		t.Error("an empty answer filled")
	}
}
