package problem

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// InitialNoise is x_T [hi − lo, d] for rows [lo, hi) of a sampling run on
// p's schedule: row i is σ(T)·z with z ~ N(0, I) from the PCG stream
// (seed, i), so that a row's noise does not depend on the batch it is in.
// It is the problem's one source of prior draws: Networks.Sample starts
// from it, and so does every study that samples from seed.
func (p *Problem) InitialNoise(seed uint64, lo, hi int) *mat.Dense {
	_, tMax := p.Schedule.Interval()
	sig := p.Schedule.Sigma(tMax)
	x := mat.NewDense(hi-lo, p.Dim, nil)
	for i := lo; i < hi; i++ {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		row := x.RawRowView(i - lo)
		for j := range row {
			row[j] = sig * rng.NormFloat64()
		}
	}
	return x
}
