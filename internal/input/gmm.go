package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/mat"
)

// GMM is a Gaussian mixture as a --gmm JSON file gives it: K means [K, d],
// K covariances d×d and optional weights (nil: equal).
type GMM struct {
	Means   *mat.Dense
	Covs    []*mat.SymDense
	Weights []float64
}

type gmmJSON struct {
	Weights []float64     `json:"weights"`
	Means   [][]float64   `json:"means"`
	Covs    [][][]float64 `json:"covs"`
}

// ParseGMM decodes and checks the JSON of a Gaussian mixture: shapes,
// finiteness, weights, symmetry (positive semi-definiteness is checked by
// mixture.NewGaussian).
func ParseGMM(raw []byte) (*GMM, error) {
	var g gmmJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("not a mixture JSON {\"weights\", \"means\", \"covs\"}: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	k := len(g.Means)
	if k == 0 {
		return nil, errors.New(`"means" is empty: want K ≥ 1 means of dimension d`)
	}
	d := len(g.Means[0])
	if d == 0 {
		return nil, errors.New("mean 0 is empty: want dimension d ≥ 1")
	}
	if len(g.Covs) != k {
		return nil, fmt.Errorf("%d means but %d covariances", k, len(g.Covs))
	}
	if g.Weights != nil && len(g.Weights) != k {
		return nil, fmt.Errorf("%d means but %d weights", k, len(g.Weights))
	}
	top := 0.0 // weights are scaled by the largest (mixture.NewGaussian): 1e308 each is fine
	for i, w := range g.Weights {
		if !(w >= 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("weight %d is %g: weights must be finite and ≥ 0", i, w)
		}
		top = max(top, w)
	}
	if g.Weights != nil && top == 0 {
		return nil, errors.New("every weight is 0: want at least one positive weight")
	}
	out := &GMM{Means: mat.NewDense(k, d, nil), Weights: g.Weights}
	for i, mu := range g.Means {
		if len(mu) != d {
			return nil, fmt.Errorf("mean %d has %d values, mean 0 has %d", i, len(mu), d)
		}
		for _, v := range mu {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("mean %d has %g: want finite values", i, v)
			}
		}
		out.Means.SetRow(i, mu)
	}
	for i, c := range g.Covs {
		if len(c) != d {
			return nil, fmt.Errorf("covariance %d has %d rows, want %d (d×d)", i, len(c), d)
		}
		scale := 0.0
		for r, row := range c {
			if len(row) != d {
				return nil, fmt.Errorf("covariance %d row %d has %d values, want %d (d×d)", i, r, len(row), d)
			}
			for _, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("covariance %d has %g: want finite values", i, v)
				}
				scale = math.Max(scale, math.Abs(v))
			}
		}
		sym := mat.NewSymDense(d, nil)
		for r := range d {
			for q := r; q < d; q++ {
				if math.Abs(c[r][q]-c[q][r]) > 1e-12*scale {
					return nil, fmt.Errorf("covariance %d is not symmetric: (%d,%d) = %g, (%d,%d) = %g", i, r, q, c[r][q], q, r, c[q][r])
				}
				sym.SetSym(r, q, c[r][q])
			}
		}
		out.Covs = append(out.Covs, sym)
	}
	return out, nil
}
