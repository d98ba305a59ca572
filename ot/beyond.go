package ot

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// BeyondConfig sets the studies beyond the paper: random data in d = 3…10
// and the failure rate as one point leaves the line.
type BeyondConfig struct {
	Dims     []int     // dimensions of the random-data study
	Offsets  []float64 // distances δ of the moved point from the line
	Schedule string    // continuous schedule (default "edm")
	Steps    int       // RK4 steps on the Karras grid (default 200)
	Chains   int
	Seed     uint64
	Tol      float64
	// LooseTol is a second, looser asymmetry tolerance at which failure
	// fractions are also reported (default 1e-2).
	LooseTol float64
}

// BeyondRow is one line of the studies beyond the paper.
type BeyondRow struct {
	Study  string  // "random-dirac", "random-gmm" or "offset"
	Dim    int     // data dimension
	N      int     // points or components
	Offset float64 // δ (offset study)
	S      float64 // end time of the map
	Summary
	FailLoose float64 // fraction of chains with I ≥ LooseTol or λ_min ≤ 0
}

func (c *BeyondConfig) defaults() {
	if len(c.Dims) == 0 {
		c.Dims = []int{3, 4, 5, 6, 8, 10}
	}
	if len(c.Offsets) == 0 {
		c.Offsets = []float64{0, 1e-3, 1e-2, 3e-2, 0.1, 0.3, 0.5}
	}
	if c.Schedule == "" {
		c.Schedule = "edm"
	}
	if c.Steps == 0 {
		c.Steps = 200
	}
	if c.LooseTol == 0 {
		c.LooseTol = 1e-2
	}
}

// RandomPoints draws n points uniform in [−½, ½]^d: affine with probability 0
// when n > 2.
func RandomPoints(n, d int, seed uint64) (*mixture.Dirac, error) {
	rng := rand.New(rand.NewPCG(seed, 0xd1ce))
	y := mat.NewDense(n, d, nil)
	for i := range y.RawMatrix().Data {
		y.RawMatrix().Data[i] = rng.Float64() - 0.5
	}
	return mixture.NewDirac(y, nil)
}

// RandomGMM draws k Gaussian components with means uniform in [−½, ½]^d and
// covariances L Lᵀ/d·scale, L with standard normal entries.
func RandomGMM(k, d int, scale float64, seed uint64) (*mixture.Gaussian, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6a3e))
	means := mat.NewDense(k, d, nil)
	for i := range means.RawMatrix().Data {
		means.RawMatrix().Data[i] = rng.Float64() - 0.5
	}
	covs := make([]*mat.SymDense, k)
	for c := range covs {
		l := mat.NewDense(d, d, nil)
		for i := range l.RawMatrix().Data {
			l.RawMatrix().Data[i] = rng.NormFloat64()
		}
		s := mat.NewSymDense(d, nil)
		s.SymOuterK(scale/float64(d), l)
		covs[c] = s
	}
	return mixture.NewGaussian(means, covs, nil)
}

// OffsetPoints are the published affine points (0,0), (0,0.5), (0,−0.6) with
// the first moved off the line to (δ, 0).
func OffsetPoints(delta float64) (*mixture.Dirac, error) {
	return Points([][]float64{{delta, 0}, {0, 0.5}, {0, -0.6}})
}

// Beyond runs the studies beyond the paper.
func Beyond(ctx context.Context, c BeyondConfig) ([]BeyondRow, error) {
	c.defaults()
	s, err := schedule.ByName(c.Schedule, schedule.Params{})
	if err != nil {
		return nil, err
	}
	p := schedule.Continuous{Schedule: s}
	run := func(data mixture.Mixture, end float64, row BeyondRow) (BeyondRow, error) {
		grid, err := Grid(p, schedule.GridKarras, end, c.Steps)
		if err != nil {
			return row, err
		}
		out, err := Test(ctx, Spec{Data: data, Schedule: p, Grid: grid, Solver: RK4, Chains: c.Chains, Seed: c.Seed, Tol: c.Tol})
		if err != nil {
			return row, fmt.Errorf("ot: beyond %s d=%d δ=%g: %w", row.Study, row.Dim, row.Offset, err)
		}
		row.Summary, row.S = out.Summary[0], grid[len(grid)-1]
		loose := 0
		for _, v := range out.Verdicts[0] {
			if v.Asym >= c.LooseTol || !(v.MinEig > 0) {
				loose++
			}
		}
		row.FailLoose = float64(loose) / float64(len(out.Verdicts[0]))
		return row, nil
	}
	var rows []BeyondRow
	for _, d := range c.Dims {
		n := d + 2
		data, err := RandomPoints(n, d, c.Seed+uint64(d))
		if err != nil {
			return nil, err
		}
		r, err := run(data, 0, BeyondRow{Study: "random-dirac", Dim: d, N: n})
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
		// Gaussian components: s where σ = 0.1 (mixture.Gaussian's Fisher
		// loses digits to cancellation at much smaller σ).
		g, err := RandomGMM(3, d, 0.02, c.Seed+uint64(d))
		if err != nil {
			return nil, err
		}
		lo, hi := s.Interval()
		end, err := schedule.SigmaInverse(s, 0.1, lo, hi)
		if err != nil {
			return nil, err
		}
		r, err = run(g, end, BeyondRow{Study: "random-gmm", Dim: d, N: 3})
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	for _, delta := range c.Offsets {
		data, err := OffsetPoints(delta)
		if err != nil {
			return nil, err
		}
		r, err := run(data, 0, BeyondRow{Study: "offset", Dim: 2, N: 3, Offset: delta})
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}
