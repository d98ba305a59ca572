package problem

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// Clip clamps images to the data range [−1, 1] (a copy).
func Clip(x *mat.Dense) *mat.Dense {
	out := mat.DenseCopyOf(x)
	raw := out.RawMatrix().Data
	for i, v := range raw {
		raw[i] = math.Max(-1, math.Min(1, v))
	}
	return out
}

// NearestDistance is min_i ‖x_q − y_i‖ for each row x_q of x [nq, d], over
// the rows y_i of y [ny, d]: a sample's distance to the nearest training
// image. ‖x − y‖² = ‖x‖² − 2⟨x, y⟩ + ‖y‖², with one product [nq, ny].
func NearestDistance(y, x *mat.Dense) []float64 {
	nq, _ := x.Dims()
	ny, _ := y.Dims()
	g := mat.NewDense(nq, ny, nil)
	g.Mul(x, y.T())
	out := make([]float64, nq)
	for q := range nq {
		xn := mat.Dot(x.RowView(q), x.RowView(q))
		best := math.Inf(1)
		row := g.RawRowView(q)
		for i := range ny {
			yi := y.RawRowView(i)
			var yn float64
			for _, v := range yi {
				yn += v * v
			}
			best = math.Min(best, xn-2*row[i]+yn)
		}
		out[q] = math.Sqrt(math.Max(best, 0))
	}
	return out
}
