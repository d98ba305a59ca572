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
	if sets := vectorsPerPoint(q, b); q.Want&MatVec != 0 && sets > 1 {
		return m.evalSets(q, b, sets)
	}
	res := newResult(q, b, d)
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

// evalSets is Eval for sets > 1 vectors a point (Query.V): one pass over
// the data for each set, the first with everything else q asks for.
func (m *Dirac) evalSets(q Query, b, sets int) (*Result, error) {
	d := m.Dim()
	set := func(s int) *mat.Dense { return q.V.Slice(s*b, (s+1)*b, 0, d).(*mat.Dense) }
	first := q
	first.V = set(0)
	res, err := m.Eval(first)
	if err != nil {
		return nil, err
	}
	out := mat.NewDense(sets*b, d, nil)
	out.Slice(0, b, 0, d).(*mat.Dense).Copy(res.MatVec)
	for s := 1; s < sets; s++ {
		r, err := m.Eval(Query{At: q.At, X: q.X, V: set(s), Want: MatVec})
		if err != nil {
			return nil, err
		}
		out.Slice(s*b, (s+1)*b, 0, d).(*mat.Dense).Copy(r.MatVec)
	}
	res.MatVec = out
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
	b := m.newDiracBlock(q, alpha, sigma, lo, hi)
	// Rows are independent: split them over the cores left by the query-block workers.
	rowWorkers := max(1, runtime.GOMAXPROCS(0)/max(1, blockWorkers))
	for c0 := 0; c0 < m.Len(); c0 += b.chunk {
		b.absorbChunk(c0, min(b.chunk, m.Len()-c0), rowWorkers)
	}
	b.emit(lo, sigma, emit)
}

// diracBlock is one query block's pass over the data: the queries, the
// running log-sum-exp (max, Σ e, Σ e‖y‖²) and the weighted sums Σ e y,
// Σ e (v·y) y and Σ e y yᵀ, all unnormalised until emit.
type diracBlock struct {
	m               *Dirac
	alpha, inv2s2   float64
	bq, chunk       int
	needV, needFull bool
	xs, vs          blas64.General // the block's queries [bq, d] and vectors [bq or 1, d]
	xnorm2, errNats []float64      // ‖x‖², and the expanded distance's cancellation bound in nats
	g, pv           blas64.General // per chunk: logits then weights [bq, chunk], and V Ycᵀ
	accY, accV      blas64.General // Σ e y and Σ e (v·y) y [bq, d]
	accFull         []*mat.SymDense
	runMax, z, m2   []float64
}

func (m *Dirac) newDiracBlock(q Query, alpha, sigma float64, lo, hi int) *diracBlock {
	d, bq := m.Dim(), hi-lo
	s2 := sigma * sigma
	b := &diracBlock{m: m, alpha: alpha, inv2s2: 1 / (2 * s2), bq: bq,
		needV: q.Want&MatVec != 0, needFull: q.Want&Full != 0}
	b.chunk = m.ChunkSize
	if b.chunk <= 0 {
		b.chunk = 4096 // measured best of 512…8192 at N = 60 000, d = 784, B = 256 (OpenBLAS)
	}
	b.chunk = min(b.chunk, m.Len())
	xm := q.X.RawMatrix()
	b.xs = blas64.General{Rows: bq, Cols: d, Stride: xm.Stride, Data: xm.Data[lo*xm.Stride:]}
	if b.needV {
		vm := q.V.RawMatrix()
		if vm.Rows == 1 {
			b.vs = blas64.General{Rows: 1, Cols: d, Stride: vm.Stride, Data: vm.Data}
		} else {
			b.vs = blas64.General{Rows: bq, Cols: d, Stride: vm.Stride, Data: vm.Data[lo*vm.Stride:]}
		}
		b.pv = general(b.vs.Rows, b.chunk, make([]float64, b.vs.Rows*b.chunk))
		b.accV = general(bq, d, make([]float64, bq*d))
	}
	b.xnorm2 = make([]float64, bq)
	b.errNats = make([]float64, bq)
	for i := range b.xnorm2 {
		r := b.xs.Data[i*b.xs.Stride : i*b.xs.Stride+d]
		b.xnorm2[i] = dot(r, r)
		b.errNats[i] = 8e-16 * (b.xnorm2[i] + alpha*alpha*m.maxY2 + 2*alpha*math.Sqrt(b.xnorm2[i]*m.maxY2)) * b.inv2s2 * float64(min(d, 64))
	}
	b.g = general(bq, b.chunk, make([]float64, bq*b.chunk))
	b.accY = general(bq, d, make([]float64, bq*d))
	if b.needFull {
		b.accFull = make([]*mat.SymDense, bq)
		for i := range b.accFull {
			b.accFull[i] = mat.NewSymDense(d, nil)
		}
	}
	b.runMax = make([]float64, bq)
	for i := range b.runMax {
		b.runMax[i] = math.Inf(-1)
	}
	b.z = make([]float64, bq)
	b.m2 = make([]float64, bq)
	return b
}

// absorbChunk adds data rows [c0, c0+nc) to the block's sums.
func (b *diracBlock) absorbChunk(c0, nc, rowWorkers int) {
	m, d, chunk := b.m, b.m.Dim(), b.chunk
	yc := blas64.General{Rows: nc, Cols: d, Stride: d, Data: m.y.Data[c0*d : (c0+nc)*d]}
	gc := blas64.General{Rows: b.bq, Cols: nc, Stride: chunk, Data: b.g.Data}
	gemmFn(blas.NoTrans, blas.Trans, 1, b.xs, yc, 0, gc) // G = X Ycᵀ
	if b.needV {
		pc := blas64.General{Rows: b.vs.Rows, Cols: nc, Stride: chunk, Data: b.pv.Data}
		gemmFn(blas.NoTrans, blas.Trans, 1, b.vs, yc, 0, pc) // P = V Ycᵀ
	}
	parallelRows(b.bq, rowWorkers, func(i int) {
		row := gc.Data[i*chunk : i*chunk+nc]
		b.rescale(i, b.logits(i, c0, row))
		b.weigh(i, c0, row)
	})
	// accY += E Yc
	gemmFn(blas.NoTrans, blas.NoTrans, 1, gc, yc, 1, b.accY)
	if b.needV {
		// H = E ∘ P (P broadcast when one vector serves all), accV += H Yc.
		for i := 0; i < b.bq; i++ {
			prow := b.pv.Data[min(i, b.vs.Rows-1)*chunk:]
			row := gc.Data[i*chunk : i*chunk+nc]
			for j := range row {
				row[j] *= prow[j]
			}
		}
		gemmFn(blas.NoTrans, blas.NoTrans, 1, gc, yc, 1, b.accV)
	}
}

// logits turns query i's row of X Ycᵀ into log π_j − ‖x − αy_j‖²/(2σ²),
// recomputing exactly the entries near the top that the expanded distance
// may have got wrong, and returns the row's maximum.
func (b *diracBlock) logits(i, c0 int, row []float64) float64 {
	m, alpha, inv2s2, xn := b.m, b.alpha, b.inv2s2, b.xnorm2[i]
	logPi, ynorm2 := m.logPi[c0:c0+len(row)], m.ynorm2[c0:c0+len(row)]
	cmax := math.Inf(-1)
	for j, gij := range row {
		l := logPi[j] - (xn-2*alpha*gij+alpha*alpha*ynorm2[j])*inv2s2
		row[j] = l
		if l > cmax {
			cmax = l
		}
	}
	if b.errNats[i] > 1e-9 && !math.IsInf(cmax, -1) {
		d := m.Dim()
		x := b.xs.Data[i*b.xs.Stride : i*b.xs.Stride+d]
		cut := cmax - refineSpan - 2*b.errNats[i]
		cmax = math.Inf(-1)
		for j := range row {
			if row[j] >= cut {
				row[j] = logPi[j] - sqDist(x, m.y.Data[(c0+j)*d:(c0+j+1)*d], alpha)*inv2s2
			}
			cmax = math.Max(cmax, row[j])
		}
	}
	return cmax
}

// rescale moves query i's sums to a new running maximum cmax if it is larger.
func (b *diracBlock) rescale(i int, cmax float64) {
	if !(cmax > b.runMax[i]) {
		return
	}
	if !math.IsInf(b.runMax[i], -1) {
		d := b.m.Dim()
		scale := math.Exp(b.runMax[i] - cmax)
		b.z[i] *= scale
		b.m2[i] *= scale
		blas64.Implementation().Dscal(d, scale, b.accY.Data[i*d:], 1)
		if b.needV {
			blas64.Implementation().Dscal(d, scale, b.accV.Data[i*d:], 1)
		}
		if b.needFull {
			scaleSym(b.accFull[i], scale)
		}
	}
	b.runMax[i] = cmax
}

// weigh turns query i's logits into weights e_j = exp(l_j − max) in place
// and adds them to Σ e, Σ e‖y‖² (and Σ e y yᵀ).
func (b *diracBlock) weigh(i, c0 int, row []float64) {
	mx := b.runMax[i]
	if math.IsInf(mx, -1) { // only zero-weight points so far
		clear(row)
		return
	}
	ynorm2 := b.m.ynorm2[c0 : c0+len(row)]
	var zi, mi float64
	for j, l := range row {
		e := math.Exp(l - mx)
		row[j] = e
		zi += e
		mi += e * ynorm2[j]
	}
	b.z[i] += zi
	b.m2[i] += mi
	if b.needFull {
		d := b.m.Dim()
		accumulateFull(b.accFull[i], row, b.m.y.Data[c0*d:(c0+len(row))*d], d)
	}
}

// emit normalises each query's sums into its posterior and hands it on.
func (b *diracBlock) emit(lo int, sigma float64, emit func(int, *posterior)) {
	d := b.m.Dim()
	s2 := sigma * sigma
	logNorm := -0.5 * float64(d) * math.Log(2*math.Pi*s2)
	p := &posterior{}
	for i := 0; i < b.bq; i++ {
		inv := 1 / b.z[i]
		p.ybar = b.accY.Data[i*d : (i+1)*d]
		for k := range p.ybar {
			p.ybar[k] *= inv
		}
		p.m2 = b.m2[i] * inv
		p.logq = b.runMax[i] + math.Log(b.z[i]) + logNorm
		if b.needV {
			p.cv = b.accV.Data[i*d : (i+1)*d]
			for k := range p.cv {
				p.cv[k] *= inv
			}
		}
		if b.needFull {
			scaleSym(b.accFull[i], inv)
			p.full = b.accFull[i]
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
