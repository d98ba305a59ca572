// Package draw makes the random queries the studies and benchmarks score
// estimators on.
package draw

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Queries are x = α x₀ + σ z [Q, d], z ~ N(0, I), and a vector v ~ N(0, I)
// [Q, d] per row of x₀ [Q, d] at coefficients c, drawn from rng row by row,
// each entry of x before the same entry of v.
func Queries(c schedule.Coefficients, x0 *mat.Dense, rng *rand.Rand) (x, v *mat.Dense) {
	q, d := x0.Dims()
	x, v = mat.NewDense(q, d, nil), mat.NewDense(q, d, nil)
	for i := range q {
		for j := range d {
			x.Set(i, j, c.Alpha*x0.At(i, j)+c.Sigma*rng.NormFloat64())
			v.Set(i, j, rng.NormFloat64())
		}
	}
	return x, v
}
