package plotx

import (
	"fmt"
	"math"
)

// checkAxis reports whether v is a usable grid axis: at least two finite,
// strictly increasing values.
func checkAxis(name string, v []float64) error {
	if len(v) < 2 {
		return fmt.Errorf("plotx: %s has %d values, need at least 2", name, len(v))
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("plotx: %s[%d] = %v is not finite", name, i, x)
		}
		if i > 0 && !(x > v[i-1]) {
			return fmt.Errorf("plotx: %s is not strictly increasing at index %d (%v after %v)", name, i, x, v[i-1])
		}
	}
	return nil
}

// checkField reports whether f is a field of len(ys) rows of len(xs) values.
func checkField(name string, f [][]float64, nx, ny int) error {
	if len(f) != ny {
		return fmt.Errorf("plotx: %s has %d rows, want len(ys) = %d", name, len(f), ny)
	}
	for iy, row := range f {
		if len(row) != nx {
			return fmt.Errorf("plotx: %s row %d has %d values, want len(xs) = %d", name, iy, len(row), nx)
		}
	}
	return nil
}

// grid adapts (xs, ys, z[iy][ix]) to plotter.GridXYZ (columns are x, rows are y).
type grid struct {
	xs, ys []float64
	z      [][]float64
}

func (g grid) Dims() (c, r int)   { return len(g.xs), len(g.ys) }
func (g grid) Z(c, r int) float64 { return g.z[r][c] }
func (g grid) X(c int) float64    { return g.xs[c] }
func (g grid) Y(r int) float64    { return g.ys[r] }

// finiteRange returns the smallest and largest finite values of z; ok is false
// when there is none.
func finiteRange(z [][]float64) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, row := range z {
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return lo, hi, lo <= hi
}
