package access

// The quick-start experiment (`dfx reproduce fields`, notebook 00): the
// exact Fisher-trace field tr F(x, t) and score field ∇log q_t(x) of a 2-D
// data mixture on a grid, at several times — what the paper's
// outer-product form (Props. 1 and 4) gives without any network.

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// FieldsConfig chooses the mixture, the schedule and the grid.
type FieldsConfig struct {
	// Data are the Dirac points (N×2); nil means Ring(8, 2).
	Data *mat.Dense
	// Schedule by name (schedule.ByName) with default parameters.
	Schedule string
	// Times at which the fields are drawn.
	Times []float64
	// Grid is the number of grid points per axis; Extent the half-width of
	// the square [−Extent, Extent]².
	Grid   int
	Extent float64
	// Arrows is the number of score arrows per axis.
	Arrows int
}

// FieldsQuick is the profile the notebooks and CI use.
func FieldsQuick() FieldsConfig {
	return FieldsConfig{Schedule: "edm", Times: []float64{0.2, 0.6, 1.5}, Grid: 48, Extent: 3.5, Arrows: 14}
}

// FieldsFull is the profile of `dfx reproduce fields`.
func FieldsFull() FieldsConfig {
	return FieldsConfig{Schedule: "edm", Times: []float64{0.1, 0.2, 0.4, 0.8, 1.5}, Grid: 160, Extent: 3.5, Arrows: 20}
}

// Ring returns k points evenly spaced on a circle of the given radius.
func Ring(k int, radius float64) *mat.Dense {
	y := mat.NewDense(k, 2, nil)
	for i := 0; i < k; i++ {
		a := 2 * math.Pi * float64(i) / float64(k)
		y.Set(i, 0, radius*math.Cos(a))
		y.Set(i, 1, radius*math.Sin(a))
	}
	return y
}

// Field holds the exact quantities on the grid at one time; matrices are
// indexed [iy][ix].
type Field struct {
	T, Sigma       float64
	Trace, LogP    [][]float64
	ScoreX, ScoreY [][]float64
	// ArrowXs/ArrowYs and ArrowU/ArrowV are the (coarser) arrow grid.
	ArrowXs, ArrowYs []float64
	ArrowU, ArrowV   [][]float64
}

// FieldsResult is the quick-start's output.
type FieldsResult struct {
	Config   FieldsConfig
	Data     *mat.Dense
	Xs, Ys   []float64
	Fields   []Field
	Schedule schedule.Schedule
}

// RunFields evaluates the fields.
func RunFields(ctx context.Context, cfg FieldsConfig) (*FieldsResult, error) {
	if cfg.Grid < 2 || cfg.Arrows < 2 {
		return nil, fmt.Errorf("toys: fields: grid %d and arrows %d must be at least 2", cfg.Grid, cfg.Arrows)
	}
	if !(cfg.Extent > 0) || math.IsInf(cfg.Extent, 0) {
		return nil, fmt.Errorf("toys: fields: extent %v must be positive and finite", cfg.Extent)
	}
	if len(cfg.Times) == 0 {
		return nil, errors.New("toys: fields: no times")
	}
	s, err := schedule.ByName(cfg.Schedule, schedule.Params{})
	if err != nil {
		return nil, fmt.Errorf("toys: fields: %w", err)
	}
	data := cfg.Data
	if data == nil {
		data = Ring(8, 2)
	}
	if _, d := data.Dims(); d != 2 {
		return nil, fmt.Errorf("toys: fields: data must be 2-D, got d = %d", d)
	}
	m, err := mixture.NewDirac(data, nil)
	if err != nil {
		return nil, fmt.Errorf("toys: fields: %w", err)
	}
	res := &FieldsResult{Config: cfg, Data: data, Xs: fieldsLinspace(-cfg.Extent, cfg.Extent, cfg.Grid), Schedule: s}
	res.Ys = res.Xs
	grid := gridPoints(res.Xs, res.Ys)
	ax := fieldsLinspace(-cfg.Extent, cfg.Extent, cfg.Arrows)
	arrows := gridPoints(ax, ax)
	for _, t := range cfg.Times {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := schedule.At(s, t)
		if err != nil {
			return nil, fmt.Errorf("toys: fields: %w", err)
		}
		r, err := m.Eval(mixture.Query{At: c, X: grid, Want: mixture.Trace | mixture.LogProb | mixture.Score})
		if err != nil {
			return nil, fmt.Errorf("toys: fields: t = %g: %w", t, err)
		}
		ra, err := m.Eval(mixture.Query{At: c, X: arrows, Want: mixture.Score})
		if err != nil {
			return nil, fmt.Errorf("toys: fields: t = %g: %w", t, err)
		}
		f := Field{T: t, Sigma: s.Sigma(t), ArrowXs: ax, ArrowYs: ax}
		f.Trace = reshape(r.Trace, cfg.Grid)
		f.LogP = reshape(r.LogProb, cfg.Grid)
		f.ScoreX = reshape(mat.Col(nil, 0, r.Score), cfg.Grid)
		f.ScoreY = reshape(mat.Col(nil, 1, r.Score), cfg.Grid)
		f.ArrowU = reshape(mat.Col(nil, 0, ra.Score), cfg.Arrows)
		f.ArrowV = reshape(mat.Col(nil, 1, ra.Score), cfg.Arrows)
		res.Fields = append(res.Fields, f)
	}
	return res, nil
}

func fieldsLinspace(a, b float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = a + (b-a)*float64(i)/float64(n-1)
	}
	return out
}

// gridPoints lists (x, y) row by row: index iy*len(xs) + ix.
func gridPoints(xs, ys []float64) *mat.Dense {
	g := mat.NewDense(len(xs)*len(ys), 2, nil)
	for iy, y := range ys {
		for ix, x := range xs {
			g.Set(iy*len(xs)+ix, 0, x)
			g.Set(iy*len(xs)+ix, 1, y)
		}
	}
	return g
}

func reshape(v []float64, n int) [][]float64 {
	out := make([][]float64, len(v)/n)
	for i := range out {
		out[i] = v[i*n : (i+1)*n]
	}
	return out
}
