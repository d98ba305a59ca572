package mixture

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Dirac is the mixture q_0 = Σ_i π_i δ(x − y_i) of a finite data set, e.g.
// the empirical distribution of a training set (paper eq. dirac_initial_dist).
//
// Eval costs O(B·N·d) and is made of blocked matrix products: the data are
// walked in chunks of ChunkSize rows with an online log-sum-exp, so memory is
// O(B_block·ChunkSize + B·d), never N×d per query nor B×N×d.
type Dirac struct {
	y      blas64.General // [N, d], row-major copy of the data
	logPi  []float64      // normalised log prior weights
	ynorm2 []float64      // ‖y_i‖²
	maxY2  float64

	// ChunkSize is the number of data rows per block (default 4096);
	// QueryBlock the number of queries per block (default 256).
	ChunkSize, QueryBlock int
}

// NewDirac copies the data (N×d, N ≥ 1) and optional non-negative weights
// (nil for uniform; normalised internally).
func NewDirac(y *mat.Dense, weights []float64) (*Dirac, error) {
	if y == nil || y.IsEmpty() {
		return nil, fmt.Errorf("mixture: empty data set: %w", ErrInput)
	}
	n, d := y.Dims()
	if err := checkFinite("data", y); err != nil {
		return nil, err
	}
	logPi, err := normalisedLogWeights(weights, n)
	if err != nil {
		return nil, err
	}
	m := &Dirac{
		y:      blas64.General{Rows: n, Cols: d, Stride: d, Data: make([]float64, n*d)},
		logPi:  logPi,
		ynorm2: make([]float64, n),
	}
	for i := 0; i < n; i++ {
		row := m.y.Data[i*d : (i+1)*d]
		copy(row, y.RawRowView(i))
		m.ynorm2[i] = dot(row, row)
		m.maxY2 = math.Max(m.maxY2, m.ynorm2[i])
	}
	return m, nil
}

// Dim is d.
func (m *Dirac) Dim() int { return m.y.Cols }

// Len is N, the number of data points.
func (m *Dirac) Len() int { return m.y.Rows }

// Data returns a view of the data as a [N, d] matrix (do not modify).
func (m *Dirac) Data() *mat.Dense {
	return mat.NewDense(m.y.Rows, m.y.Cols, m.y.Data)
}

// Eval implements Mixture.
func (m *Dirac) Eval(q Query) (*Result, error) {
	d := m.Dim()
	b, c, err := checkQuery(q, d)
	if err != nil {
		return nil, err
	}
	res := newResult(q.Want, b, d)
	qb := m.QueryBlock
	if qb <= 0 {
		qb = 256
	}
	nblocks := (b + qb - 1) / qb
	workers := min(runtime.GOMAXPROCS(0), nblocks)
	var wg sync.WaitGroup
	next := make(chan int, nblocks)
	for i := 0; i < nblocks; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for blk := range next {
				lo, hi := blk*qb, min((blk+1)*qb, b)
				m.evalBlock(q, c.Alpha, c.Sigma, lo, hi, workers, func(i int, p *posterior) {
					x := q.X.RawRowView(i)
					var v []float64
					if q.V != nil {
						v = vecRow(q.V, i)
					}
					finish(res, i, c, x, v, p)
				})
			}
		}()
	}
	wg.Wait()
	if err := checkFiniteResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

func vecRow(v *mat.Dense, i int) []float64 {
	if r, _ := v.Dims(); r == 1 {
		return v.RawRowView(0)
	}
	return v.RawRowView(i)
}

// refineSpan is how far (in nats) below the chunk's best logit an entry is
// recomputed exactly when the expanded ‖x − αy‖² may have lost precision.
const refineSpan = 50

// evalBlock computes the posterior moments of queries [lo, hi) and hands
// each to emit. It is the hot loop: per data chunk, G = X Ycᵀ (logits),
// accY += E Yc, and for MatVec P = V Ycᵀ, accV += (E∘P) Yc, with running
// max/rescaling for the log-sum-exp.
func (m *Dirac) evalBlock(q Query, alpha, sigma float64, lo, hi, blockWorkers int, emit func(int, *posterior)) {
	d, n := m.Dim(), m.Len()
	bq := hi - lo
	want := q.Want
	needV := want&MatVec != 0
	needFull := want&Full != 0
	chunk := m.ChunkSize
	if chunk <= 0 {
		chunk = 4096 // measured best of 512…8192 at N = 60 000, d = 784, B = 256 (OpenBLAS)
	}
	chunk = min(chunk, n)
	s2 := sigma * sigma
	inv2s2 := 1 / (2 * s2)

	xs := blas64.General{Rows: bq, Cols: d, Stride: q.X.RawMatrix().Stride, Data: q.X.RawMatrix().Data[lo*q.X.RawMatrix().Stride:]}
	var vs blas64.General
	if needV {
		vm := q.V.RawMatrix()
		if vm.Rows == 1 {
			vs = blas64.General{Rows: 1, Cols: d, Stride: vm.Stride, Data: vm.Data}
		} else {
			vs = blas64.General{Rows: bq, Cols: d, Stride: vm.Stride, Data: vm.Data[lo*vm.Stride:]}
		}
	}
	xnorm2 := make([]float64, bq)
	for i := range xnorm2 {
		r := xs.Data[i*xs.Stride : i*xs.Stride+d]
		xnorm2[i] = dot(r, r)
	}
	// Cancellation bound of the expanded distance, in nats, per query.
	errNats := make([]float64, bq)
	for i := range errNats {
		errNats[i] = 8e-16 * (xnorm2[i] + alpha*alpha*m.maxY2 + 2*alpha*math.Sqrt(xnorm2[i]*m.maxY2)) * inv2s2 * float64(min(d, 64))
	}

	g := blas64.General{Rows: bq, Cols: chunk, Stride: chunk, Data: make([]float64, bq*chunk)}
	var pv blas64.General
	if needV {
		pv = blas64.General{Rows: vs.Rows, Cols: chunk, Stride: chunk, Data: make([]float64, vs.Rows*chunk)}
	}
	accY := blas64.General{Rows: bq, Cols: d, Stride: d, Data: make([]float64, bq*d)}
	var accV blas64.General
	if needV {
		accV = blas64.General{Rows: bq, Cols: d, Stride: d, Data: make([]float64, bq*d)}
	}
	var accFull []*mat.SymDense
	if needFull {
		accFull = make([]*mat.SymDense, bq)
		for i := range accFull {
			accFull[i] = mat.NewSymDense(d, nil)
		}
	}
	// Rows are independent: split them over the cores left by the query-block workers.
	rowWorkers := max(1, runtime.GOMAXPROCS(0)/max(1, blockWorkers))
	runMax := make([]float64, bq)
	for i := range runMax {
		runMax[i] = math.Inf(-1)
	}
	z := make([]float64, bq)
	m2 := make([]float64, bq)

	for c0 := 0; c0 < n; c0 += chunk {
		nc := min(chunk, n-c0)
		yc := blas64.General{Rows: nc, Cols: d, Stride: d, Data: m.y.Data[c0*d : (c0+nc)*d]}
		gc := blas64.General{Rows: bq, Cols: nc, Stride: chunk, Data: g.Data}
		gemmFn(blas.NoTrans, blas.Trans, 1, xs, yc, 0, gc) // G = X Ycᵀ
		if needV {
			pc := blas64.General{Rows: vs.Rows, Cols: nc, Stride: chunk, Data: pv.Data}
			gemmFn(blas.NoTrans, blas.Trans, 1, vs, yc, 0, pc) // P = V Ycᵀ
		}
		parallelRows(bq, rowWorkers, func(i int) {
			row := gc.Data[i*chunk : i*chunk+nc]
			cmax := math.Inf(-1)
			for j, gij := range row {
				l := m.logPi[c0+j] - (xnorm2[i]-2*alpha*gij+alpha*alpha*m.ynorm2[c0+j])*inv2s2
				row[j] = l
				if l > cmax {
					cmax = l
				}
			}
			if errNats[i] > 1e-9 && !math.IsInf(cmax, -1) {
				x := xs.Data[i*xs.Stride : i*xs.Stride+d]
				cut := cmax - refineSpan - 2*errNats[i]
				cmax = math.Inf(-1)
				for j := range row {
					if row[j] >= cut {
						row[j] = m.logPi[c0+j] - sqDist(x, m.y.Data[(c0+j)*d:(c0+j+1)*d], alpha)*inv2s2
					}
					cmax = math.Max(cmax, row[j])
				}
			}
			if cmax > runMax[i] {
				if !math.IsInf(runMax[i], -1) {
					scale := math.Exp(runMax[i] - cmax)
					z[i] *= scale
					m2[i] *= scale
					blas64.Implementation().Dscal(d, scale, accY.Data[i*d:], 1)
					if needV {
						blas64.Implementation().Dscal(d, scale, accV.Data[i*d:], 1)
					}
					if needFull {
						scaleSym(accFull[i], scale)
					}
				}
				runMax[i] = cmax
			}
			mx := runMax[i]
			if math.IsInf(mx, -1) { // only zero-weight points so far
				clear(row)
				return
			}
			var zi, mi float64
			for j, l := range row {
				e := math.Exp(l - mx)
				row[j] = e
				zi += e
				mi += e * m.ynorm2[c0+j]
			}
			z[i] += zi
			m2[i] += mi
			if needFull {
				accumulateFull(accFull[i], row, m.y.Data[c0*d:(c0+nc)*d], d)
			}
		})
		// accY += E Yc
		gemmFn(blas.NoTrans, blas.NoTrans, 1, gc, yc, 1, accY)
		if needV {
			// H = E ∘ P (P broadcast when one vector serves all), accV += H Yc.
			for i := 0; i < bq; i++ {
				prow := pv.Data[min(i, vs.Rows-1)*chunk:]
				row := gc.Data[i*chunk : i*chunk+nc]
				for j := range row {
					row[j] *= prow[j]
				}
			}
			gemmFn(blas.NoTrans, blas.NoTrans, 1, gc, yc, 1, accV)
		}
	}

	logNorm := -0.5 * float64(d) * math.Log(2*math.Pi*s2)
	p := &posterior{}
	for i := 0; i < bq; i++ {
		inv := 1 / z[i]
		p.ybar = accY.Data[i*d : (i+1)*d]
		for k := range p.ybar {
			p.ybar[k] *= inv
		}
		p.m2 = m2[i] * inv
		p.logq = runMax[i] + math.Log(z[i]) + logNorm
		if needV {
			p.cv = accV.Data[i*d : (i+1)*d]
			for k := range p.cv {
				p.cv[k] *= inv
			}
		}
		if needFull {
			scaleSym(accFull[i], inv)
			p.full = accFull[i]
		}
		emit(lo+i, p)
	}
}

// fullPrune is the relative weight (to the running maximum) below which an
// atom is left out of the full second moment Σ w_i y_i y_iᵀ: it changes the
// matrix by at most N·fullPrune·max‖y‖² relative to its largest entry's
// scale, far below float64 round-off, and makes Full cost O(N_eff·d²)
// rather than O(N·d²) once the posterior concentrates (small t).
const fullPrune = 1e-20

// accumulateFull adds Σ_j e_j y_j y_jᵀ over one chunk (e the unnormalised
// weights, y the chunk's rows, row-major [nc, d]) to acc, leaving out atoms
// below fullPrune. The product runs as Sᵀ·S with S = diag(√e) Y on the
// package's GEMM (one fresh buffer per call keeps rows independent).
func accumulateFull(acc *mat.SymDense, e, y []float64, d int) {
	var keep []int
	for j, w := range e {
		if w > fullPrune {
			keep = append(keep, j)
		}
	}
	if len(keep) == 0 {
		return
	}
	k := len(keep)
	st := make([]float64, d*k) // Sᵀ [d, k]
	sv := make([]float64, k*d) // S [k, d]
	for c, j := range keep {
		w := math.Sqrt(e[j])
		yr := y[j*d : (j+1)*d]
		sr := sv[c*d : (c+1)*d]
		for r, v := range yr {
			sr[r] = w * v
			st[r*k+c] = w * v
		}
	}
	out := make([]float64, d*d)
	gemmFn(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: d, Cols: k, Stride: k, Data: st},
		blas64.General{Rows: k, Cols: d, Stride: d, Data: sv}, 0,
		blas64.General{Rows: d, Cols: d, Stride: d, Data: out})
	raw := acc.RawSymmetric()
	for r := range d {
		dst, src := raw.Data[r*raw.Stride+r:r*raw.Stride+d], out[r*d+r:(r+1)*d]
		for c := range dst {
			dst[c] += src[c]
		}
	}
}

// sqDist is ‖x − a y‖², computed without cancellation.
func sqDist(x, y []float64, a float64) float64 {
	s := 0.0
	for k := range x {
		u := x[k] - a*y[k]
		s += u * u
	}
	return s
}

func scaleSym(s *mat.SymDense, f float64) {
	r := s.RawSymmetric()
	for i := 0; i < r.N; i++ {
		row := r.Data[i*r.Stride+i : i*r.Stride+r.N]
		for k := range row {
			row[k] *= f
		}
	}
}

// parallelRows runs f(0..n−1) on up to workers goroutines, in contiguous ranges.
func parallelRows(n, workers int, f func(i int)) {
	if workers <= 1 || n < 2*workers {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				f(i)
			}
		}()
	}
	wg.Wait()
}
