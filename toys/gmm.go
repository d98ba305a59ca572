package toys

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/problem"
)

// GMM is a Gaussian mixture in d dimensions with low-rank-plus-isotropic
// covariances: its exact q_t is known in closed form (dfx/mixture), and a
// target point lies between two of its components (the adjoint study's
// reward).
type GMM struct {
	Mix     *mixture.Gaussian
	Means   *mat.Dense
	Dirs    [][][]float64 // per component, the low-rank directions scaled by √λ
	Iso     float64       // isotropic standard deviation
	Target  []float64
	Between [2]int
}

// NewGMM draws K means N(0, 0.36 I) (pairwise distance ≈ 0.6√(2d)),
// full covariances Σ_k = Σ_j λ_j u_j u_jᵀ + 0.05 I with 3 random unit directions
// u_j and λ = 0.5, 0.3, 0.15, uniform weights, and the target midway
// between components 0 and 1.
func NewGMM(d, k int, rng *rand.Rand) (*GMM, error) {
	p := &GMM{Means: mat.NewDense(k, d, nil), Iso: math.Sqrt(0.05), Between: [2]int{0, 1}}
	lams := []float64{0.5, 0.3, 0.15}
	var covs []*mat.SymDense
	for c := range k {
		for j := range d {
			p.Means.Set(c, j, 0.6*rng.NormFloat64())
		}
		cov := mat.NewSymDense(d, nil)
		var dirs [][]float64
		for _, l := range lams {
			u := make([]float64, d)
			for j := range u {
				u[j] = rng.NormFloat64()
			}
			floats.Scale(math.Sqrt(l)/floats.Norm(u, 2), u)
			cov.SymRankOne(cov, 1, mat.NewVecDense(d, u))
			dirs = append(dirs, u)
		}
		for j := range d {
			cov.SetSym(j, j, cov.At(j, j)+p.Iso*p.Iso)
		}
		covs = append(covs, cov)
		p.Dirs = append(p.Dirs, dirs)
	}
	mix, err := mixture.NewGaussian(p.Means, covs, nil)
	if err != nil {
		return nil, err
	}
	p.Mix = mix
	p.Target = make([]float64, d)
	floats.AddScaled(p.Target, 0.5, p.Means.RawRowView(0))
	floats.AddScaled(p.Target, 0.5, p.Means.RawRowView(1))
	return p, nil
}

// Sample draws n points of the mixture.
func (p *GMM) Sample(n int, rng *rand.Rand) [][]float64 {
	k, d := p.Means.Dims()
	out := make([][]float64, n)
	for i := range out {
		c := rng.IntN(k)
		x := append([]float64(nil), p.Means.RawRowView(c)...)
		for _, u := range p.Dirs[c] {
			floats.AddScaled(x, rng.NormFloat64(), u)
		}
		for j := range d {
			x[j] += p.Iso * rng.NormFloat64()
		}
		out[i] = x
	}
	return out
}

// NearTarget is the fraction of rows of x whose nearest mean is one of p.Between.
func (p *GMM) NearTarget(x *mat.Dense) float64 {
	b, _ := x.Dims()
	k, _ := p.Means.Dims()
	hit := 0
	for i := range b {
		best, arg := math.Inf(1), -1
		for c := range k {
			if dd := floats.Distance(x.RawRowView(i), p.Means.RawRowView(c), 2); dd < best {
				best, arg = dd, c
			}
		}
		if arg == p.Between[0] || arg == p.Between[1] {
			hit++
		}
	}
	return float64(hit) / float64(b)
}

// Problem is the mixture as a problem of dimension d on schedule s: its
// exact reference is the mixture itself, and it has no data set or
// networks of its own (a study draws from Exact and trains what it needs).
func (p *GMM) Problem(name string, s schedule.Schedule) *problem.Problem {
	_, d := p.Means.Dims()
	return &problem.Problem{Name: name, Dim: d, Schedule: s, Exact: problem.ExactFrom(p.Mix)}
}
