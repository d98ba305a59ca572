package mixture

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/stats"
)

// DiffusedLogProbs draws from q_t (its mean log q_t agrees with independent
// draws x = α x₀ + σ z within sampling error) and, with the same x₀ and ε
// at every time, moves each draw's log q_t smoothly: between two close
// times a draw changes far less than the spread of log q_t.
func TestDiffusedLogProbsAreDrawsOfQtSmoothInT(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := testMixtures(t)[1].Mixture.(*Gaussian)
	s := schedule.DefaultVP()
	var cs []schedule.Coefficients
	for _, tt := range []float64{0.3, 0.301} {
		c, err := schedule.At(s, tt)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	const n = 4000
	ells, err := g.DiffusedLogProbs(rng, n, cs)
	if err != nil {
		t.Fatal(err)
	}
	// Independent draws at the first time.
	x, err := g.Sample(rng, n, -1)
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	for i := range n {
		for j := range g.d {
			x.Set(i, j, c.Alpha*x.At(i, j)+c.Sigma*rng.NormFloat64())
		}
	}
	r, err := g.Eval(Query{At: c, X: x, Want: LogProb})
	if err != nil {
		t.Fatal(err)
	}
	m1, se1 := stats.MeanSE(ells[0])
	m2, se2 := stats.MeanSE(r.LogProb)
	if math.Abs(m1-m2) > 4*math.Hypot(se1, se2) {
		t.Errorf("mean log q_t: %.4f ± %.4f from DiffusedLogProbs, %.4f ± %.4f from independent draws", m1, se1, m2, se2)
	}
	step, spread := 0.0, se1*math.Sqrt(n)
	for i := range n {
		step = math.Max(step, math.Abs(ells[1][i]-ells[0][i]))
	}
	if !(step < 0.05*spread) {
		t.Errorf("a draw's log q_t moved by up to %.3g between t = 0.3 and 0.301 (spread %.3g): not the same draw", step, spread)
	}
	if _, err := g.DiffusedLogProbs(rng, 0, cs); err == nil {
		t.Error("n = 0 accepted")
	}
}
