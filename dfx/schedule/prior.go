package schedule

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// The prior of the PF-ODE lives with the schedule (as score_sde's SDE
// classes carry prior_sampling and prior_logp): x_T ~ N(0, σ_T² I), with
// σ_T = σ at the coefficients' time (the schedule's TMax, or an earlier end
// of an integration).

// PriorLogProb is log N(x; 0, σ² I) for each row of x [B, d], σ = c.Sigma:
// −(d/2) log 2π − d log σ − ‖x‖²/(2σ²). It returns [B].
func PriorLogProb(c Coefficients, x *mat.Dense) []float64 {
	b, d := x.Dims()
	out := make([]float64, b)
	s := c.Sigma
	k := -0.5*float64(d)*math.Log(2*math.Pi) - float64(d)*math.Log(s)
	for i := 0; i < b; i++ {
		r := x.RawRowView(i)[:d]
		n2 := 0.0
		for _, v := range r {
			n2 += v * v
		}
		out[i] = k - 0.5*n2/(s*s)
	}
	return out
}

// Normal is the source of standard normal draws SamplePrior uses
// (*math/rand/v2.Rand is one).
type Normal interface{ NormFloat64() float64 }

// SamplePrior draws n points of N(0, σ² I) in dimension d, σ = c.Sigma, row
// by row from rng: [n, d]. The same generator state gives the same points.
func SamplePrior(c Coefficients, n, d int, rng Normal) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	raw := x.RawMatrix().Data
	for i := range raw {
		raw[i] = c.Sigma * rng.NormFloat64()
	}
	return x
}

// Prior returns the coefficients at the schedule's prior time T = TMax.
func Prior(s Schedule) Coefficients {
	_, hi := s.Interval()
	c, err := At(s, hi)
	if err != nil {
		panic(err) // a validated schedule is defined at TMax
	}
	return c
}
