package mixture

import (
	"fmt"
	"math"
	"runtime"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"
)

// Nearest returns, for each row of x [B, d], the indices of its k nearest
// data points (Euclidean, nearest first) and their distances: the atoms
// that dominate the Dirac mixture's posterior as σ → 0. Distances come from
// blocked products ‖x‖² − 2 x·y + ‖y‖², refined exactly for the k kept.
func (m *Dirac) Nearest(x *mat.Dense, k int) ([][]int, [][]float64, error) {
	if x == nil || x.IsEmpty() {
		return nil, nil, fmt.Errorf("mixture: Nearest: no queries: %w", ErrInput)
	}
	if err := checkFinite("query", x); err != nil {
		return nil, nil, err
	}
	b, d := x.Dims()
	n := m.Len()
	if d != m.Dim() || k < 1 || k > n {
		return nil, nil, fmt.Errorf("mixture: Nearest: queries of dim %d for data of dim %d, k = %d of %d points: %w", d, m.Dim(), k, n, ErrInput)
	}
	idx, dist := make([][]int, b), make([][]float64, b)
	const qb = 128
	chunk := min(4096, n)
	// A few more candidates than k from the expanded distances, then exact ones.
	cand := min(n, k+8)
	nblocks := (b + qb - 1) / qb
	parallelRows(nblocks, min(runtime.GOMAXPROCS(0), nblocks), func(blk int) {
		lo, hi := blk*qb, min((blk+1)*qb, b)
		nq := hi - lo
		xs := x.Slice(lo, hi, 0, d).(*mat.Dense)
		prod := make([]float64, nq*chunk)
		type pair struct {
			d float64
			i int
		}
		best := make([][]pair, nq)
		for c0 := 0; c0 < n; c0 += chunk {
			c1 := min(c0+chunk, n)
			yc := general(c1-c0, d, m.y.Data[c0*d:c1*d])
			gemmFn(blas.NoTrans, blas.Trans, 1, denseGeneral(xs), yc, 0, general(nq, c1-c0, prod[:nq*(c1-c0)]))
			for q := 0; q < nq; q++ {
				row := prod[q*(c1-c0) : (q+1)*(c1-c0)]
				for j, p := range row {
					v := m.ynorm2[c0+j] - 2*p // ‖x‖² is the same for every candidate
					if len(best[q]) < cand {
						best[q] = append(best[q], pair{v, c0 + j})
						if len(best[q]) == cand {
							sort.Slice(best[q], func(a, b int) bool { return best[q][a].d < best[q][b].d })
						}
						continue
					}
					if v >= best[q][cand-1].d {
						continue
					}
					pos := sort.Search(cand, func(a int) bool { return best[q][a].d > v })
					copy(best[q][pos+1:], best[q][pos:cand-1])
					best[q][pos] = pair{v, c0 + j}
				}
			}
		}
		for q := 0; q < nq; q++ {
			xr := xs.RawRowView(q)
			for i := range best[q] {
				y := m.y.Data[best[q][i].i*d : (best[q][i].i+1)*d]
				best[q][i].d = math.Sqrt(sqDist(xr, y, 1))
			}
			sort.Slice(best[q], func(a, b int) bool { return best[q][a].d < best[q][b].d })
			idx[lo+q], dist[lo+q] = make([]int, k), make([]float64, k)
			for i := 0; i < k; i++ {
				idx[lo+q][i], dist[lo+q][i] = best[q][i].i, best[q][i].d
			}
		}
	})
	return idx, dist, nil
}
