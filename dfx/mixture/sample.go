package mixture

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// Sample draws n exact samples of q_0 (a component by its weight, then
// μ + U diag(√λ) z₁ + √ρ (rest of z₂) + √ν z₃ on the idle coordinates),
// from the components labelled class (all when class < 0).
func (g *Gaussian) Sample(rng *rand.Rand, n, class int) (*mat.Dense, error) {
	if n < 1 {
		return nil, fmt.Errorf("mixture: Sample(%d): want n ≥ 1: %w", n, ErrInput)
	}
	m := g
	if class >= 0 {
		var err error
		if m, err = g.Restrict(class); err != nil {
			return nil, err
		}
	}
	d, kk := m.d, m.Components()
	cum := make([]float64, kk)
	acc := 0.0
	for k, l := range m.logPi {
		acc += math.Exp(l)
		cum[k] = acc
	}
	out := mat.NewDense(n, d, nil)
	z := make([]float64, d)
	for i := 0; i < n; i++ {
		u := rng.Float64() * acc
		k := 0
		for k < kk-1 && u >= cum[k] {
			k++
		}
		r, _, nr := m.dims(k)
		row := out.RawRowView(i)
		copy(row, m.means.RawRowView(k))
		idle := map[int]bool{}
		for _, j := range m.idle[k] {
			idle[j] = true
			row[j] += math.Sqrt(m.nu[k]) * rng.NormFloat64()
		}
		// The rest: an isotropic draw on the active coordinates, less its part in U.
		if nr > 0 && m.rho[k] > 0 {
			for j := range z {
				z[j] = 0
				if !idle[j] {
					z[j] = rng.NormFloat64()
				}
			}
			coef := make([]float64, r)
			mulTVec(coef, m.u[k], z)
			back := make([]float64, d)
			mulVec(back, m.u[k], coef)
			s := math.Sqrt(m.rho[k])
			for j := range row {
				row[j] += s * (z[j] - back[j])
			}
		}
		coef := make([]float64, r)
		for l := range coef {
			coef[l] = math.Sqrt(m.lam[k][l]) * rng.NormFloat64()
		}
		back := make([]float64, d)
		mulVec(back, m.u[k], coef)
		for j := range row {
			row[j] += back[j]
		}
	}
	return out, nil
}

// mulVec sets dst = U x; mulTVec sets dst = Uᵀ x.
func mulVec(dst []float64, u *mat.Dense, x []float64) {
	for i := range dst {
		dst[i] = dot(u.RawRowView(i), x)
	}
}

func mulTVec(dst []float64, u *mat.Dense, x []float64) {
	clear(dst)
	for i, xi := range x {
		row := u.RawRowView(i)
		for j := range dst {
			dst[j] += row[j] * xi
		}
	}
}

// DiffusedLogProbs is log q_t(x_t) at each of the coefficients cs for n
// exact draws x_t = α x₀ + σ ε of q_t, with the same x₀ ~ q₀ and
// ε ~ N(0, I) at every time (common random numbers): each draw's log q_t
// is then smooth in t, and so are the empirical quantiles of log q_t
// under q_t that a density-guidance level differentiates
// (dfx/pfode.QuantilesOf). Row i of the result holds the n values at cs[i].
func (g *Gaussian) DiffusedLogProbs(rng *rand.Rand, n int, cs []schedule.Coefficients) ([][]float64, error) {
	x0, err := g.Sample(rng, n, -1)
	if err != nil {
		return nil, err
	}
	eps := make([]float64, n*g.d)
	for j := range eps {
		eps[j] = rng.NormFloat64()
	}
	x := mat.NewDense(n, g.d, nil)
	out := make([][]float64, len(cs))
	for i, c := range cs {
		xr, x0r := x.RawMatrix().Data, x0.RawMatrix().Data
		for j := range xr {
			xr[j] = c.Alpha*x0r[j] + c.Sigma*eps[j]
		}
		r, err := g.Eval(Query{At: c, X: x, Want: LogProb})
		if err != nil {
			return nil, err
		}
		out[i] = r.LogProb
	}
	return out, nil
}
