package mixture

import (
	"math"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/stats"
)

// gaussBlock is the number of query rows Eval processes together.
const gaussBlock = 64

// Eval implements Mixture.
func (g *Gaussian) Eval(q Query) (*Result, error) { return g.eval(q, projectedValues) }

// projectedValues bounds the projections one projectAll holds (chunks of
// rows share the packing of the bases).
const projectedValues = 1 << 22

// eval is Eval with every component's projections and distances from
// allComponents' few large products per chunk of rows (chunks of at most
// maxProjected values of Z, or gaussBlock rows), or, with maxProjected = 0,
// from one product per component and block (the direct form, the tests'
// reference).
func (g *Gaussian) eval(q Query, maxProjected int) (*Result, error) {
	b, c, err := checkQuery(q, g.d)
	if err != nil {
		return nil, err
	}
	res := newResult(q, b, g.d)
	chunk := b
	if maxProjected > 0 {
		chunk = max(gaussBlock, min(b, maxProjected/g.all.off[g.Components()]))
	}
	for lo := 0; lo < b; lo += chunk {
		hi := min(lo+chunk, b)
		var proj *projections
		if maxProjected > 0 {
			proj = g.projectAll(q.X.Slice(lo, hi, 0, g.d).(*mat.Dense), c.Alpha)
		}
		g.evalRows(q, c.Alpha, c.Sigma, lo, hi, proj, res)
	}
	if err := checkFiniteResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// evalRows computes rows [lo, hi) of res, proj (or nil) holding their
// projections.
func (g *Gaussian) evalRows(q Query, a, sigma float64, lo, hi int, proj *projections, res *Result) {
	// Blocks of at most gaussBlock rows, and at least two per worker so
	// that a small batch (an ODE solve's 50 images) still uses every core.
	n := hi - lo
	procs := runtime.GOMAXPROCS(0)
	blk := max(1, min(gaussBlock, (n+2*procs-1)/(2*procs)))
	nblocks := (n + blk - 1) / blk
	workers := 1
	if nblocks > 1 {
		workers = min(procs, nblocks)
	}
	parallelRows(nblocks, workers, func(i int) {
		from := lo + i*blk
		e := g.newGaussEval(q, a, sigma, from, min(from+blk, hi))
		if proj != nil {
			e.proj, e.prow = proj, from-lo
		}
		g.evalBlock(e, q, res)
	})
}

// general wraps a row-major block as a blas64.General.
func general(rows, cols int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
}

func denseGeneral(m *mat.Dense) blas64.General {
	r := m.RawMatrix()
	return blas64.General{Rows: r.Rows, Cols: r.Cols, Stride: r.Stride, Data: r.Data}
}

// evalBlock computes e's rows of res. Per component k, on the block
// D = X − αμ_k: Z = D U_k and the log-density (from e.proj's products, or
// directly); after the responsibilities, for the components that are not
// negligible, the component score S_k = −(A U_kᵀ + D/c⊥ + (1/c_S − 1/c⊥) D_S) with
// A = Z∘(1/c − 1/c⊥) and the posterior mean
// m_k = μ_k + α(B U_kᵀ + (ρ/c⊥) D + (ν/c_S − ρ/c⊥) D_S) with
// B = Z∘(λ/c − ρ/c⊥), as products. The Fisher is assembled as
// F = Σ_k r_k C_k⁻¹ − Σ_k r_k (s_k − s)(s_k − s)ᵀ (free of the cancellation
// of I/σ² − (α²/σ⁴) Cov at small σ).
func (g *Gaussian) evalBlock(e *gaussEval, q Query, res *Result) {
	a, lo, hi := e.a, e.lo, e.lo+e.nb
	for k := range e.kk {
		if e.proj != nil {
			e.logDensityProjected(k)
		} else {
			e.logDensity(k)
		}
	}
	logq := e.responsibilities()
	if res.LogProb != nil {
		copy(res.LogProb[lo:hi], logq)
	}
	if !e.needS && !e.needM {
		return
	}
	e.activeComponents()
	e.allocMoments()
	for _, k := range e.active {
		g.diff(e.dbuf, e.x, a, k)
		if e.proj != nil {
			e.projectedZ(k)
		}
		if e.needS {
			e.addComponentScore(k)
		}
		if e.needM {
			e.addComponentMean(k)
		}
	}
	e.writeMoments(res, lo)
	if !e.needS || !e.needDev {
		return
	}
	e.deviations()
	if res.Trace != nil {
		for i := 0; i < e.nb; i++ {
			res.Trace[lo+i] = e.trace(i)
		}
	}
	if res.MatVec != nil {
		g.matvec(q.V, q.X.RawMatrix().Rows, lo, hi, e.active, e.logr, e.sks, e.cs, e.cp, res.MatVec)
	}
	if res.Fisher != nil {
		for i := 0; i < e.nb; i++ {
			res.Fisher[lo+i] = g.fullFisher(i, e.nb, e.active, e.logr, e.sks, e.cs, e.cp)
		}
	}
}

// gaussEval is one query block's evaluation: the block D = X − αμ_k per
// component, its projections Z_k = D U_k, the responsibilities, and the
// sums the score, the denoiser and the Fisher are made of.
type gaussEval struct {
	g                     *Gaussian
	a, s2                 float64
	d, kk, nb, lo         int
	proj                  *projections // the chunk's projections (nil: logDensity's direct form)
	prow                  int          // the block's first row in proj
	x                     *mat.Dense   // the block's queries [nb, d]
	needS, needM, needDev bool

	cs     [][]float64   // α²λ_kj + σ², the variances along U_k
	cp     []componentAt // the variances of the rest and of the idle coordinates
	logdet []float64     // log det C_k
	dbuf   []float64     // D for the current component [nb, d]
	zs     [][]float64   // Z_k [nb, r_k]
	logr   []float64     // [row, k]: log π_k N(x; αμ_k, C_k), then the responsibilities

	// active are the components whose responsibility reaches negligible
	// for some row of the block (activeComponents); at[k] is k's place in
	// active (−1: left out).
	active []int
	at     []int

	score, sks []float64 // s [nb, d]; S_k [len(active), nb, d] (or one at a time when !needDev)
	ybar, m2   []float64 // ȳ [nb, d], E[‖x₀‖²|x] [nb]
	trCinv     []float64 // tr C_k⁻¹
	coef, out  []float64 // scratch [nb, d]
}

func (g *Gaussian) newGaussEval(q Query, a, sigma float64, lo, hi int) *gaussEval {
	d, kk, nb := g.d, g.Components(), hi-lo
	want := q.Want
	e := &gaussEval{g: g, a: a, s2: sigma * sigma, d: d, kk: kk, nb: nb, lo: lo,
		x:       q.X.Slice(lo, hi, 0, d).(*mat.Dense),
		needS:   want&(Score|Trace|MatVec|Full) != 0,
		needM:   want&(Denoiser|SecondMoment) != 0,
		needDev: want&(Trace|MatVec|Full) != 0, // the deviations S_k − s: every S_k kept
		cs:      make([][]float64, kk), cp: make([]componentAt, kk), logdet: make([]float64, kk),
		dbuf: make([]float64, nb*d), zs: make([][]float64, kk), logr: make([]float64, nb*kk),
	}
	for k := range kk {
		e.cs[k], e.cp[k], e.logdet[k] = g.varianceAt(k, a, e.s2)
	}
	return e
}

// varianceAt is component k's covariance C_k = α²Σ_k + σ²I at one time:
// its variances along U_k, of the rest and of the idle coordinates, and
// log det C_k.
func (g *Gaussian) varianceAt(k int, a, s2 float64) (cs []float64, c componentAt, logdet float64) {
	r, ns, nr := g.dims(k)
	cs = make([]float64, r)
	for j, l := range g.lam[k] {
		cs[j] = a*a*l + s2
		logdet += math.Log(cs[j])
	}
	c = componentAt{perp: a*a*g.rho[k] + s2, idle: a*a*g.nu[k] + s2}
	if nr > 0 {
		c.inv = 1 / c.perp
		logdet += float64(nr) * math.Log(c.perp)
	}
	if ns > 0 {
		c.idleInv = 1 / c.idle
		logdet += float64(ns) * math.Log(c.idle)
	}
	return cs, c, logdet
}

// logDensity sets Z_k = D U_k and column k of logr to
// log π_k − ½(DᵀC_k⁻¹D + log det C_k + d log 2π).
func (e *gaussEval) logDensity(k int) {
	g, d, nb := e.g, e.d, e.nb
	r, _, nr := g.dims(k)
	dbuf := e.dbuf
	g.diff(dbuf, e.x, e.a, k)
	zk := make([]float64, nb*r)
	e.zs[k] = zk
	gemmFn(blas.NoTrans, blas.NoTrans, 1, general(nb, d, dbuf), denseGeneral(g.u[k]), 0, general(nb, r, zk))
	for i := 0; i < nb; i++ {
		di := dbuf[i*d : (i+1)*d]
		dS, dd := 0.0, 0.0
		for _, j := range g.idle[k] {
			dS += di[j] * di[j]
		}
		if nr > 0 {
			dd = dot(di, di)
		}
		e.setLogDensity(i, k, zk[i*r:(i+1)*r], dd, dS)
	}
}

// responsibilities turns logr into r_ik = exp(logr − log q) in place and
// returns log q by log-sum-exp.
func (e *gaussEval) responsibilities() []float64 {
	kk := e.kk
	logq := make([]float64, e.nb)
	for i := range logq {
		row := e.logr[i*kk : (i+1)*kk]
		logq[i] = stats.LogSumExp(row)
		for k, l := range row {
			row[k] = math.Exp(l - logq[i])
		}
	}
	return logq
}

// negligible is the responsibility below which a component is left out of
// a block's moments: its share of the score, the denoiser and the Fisher is
// then at most r·(2|log r| + log-det spread)/d relative to the largest
// terms (≈ 10⁻¹⁵ at r = 10⁻¹⁸), below float64 rounding.
const negligible = 1e-18

// activeComponents lists the components with a responsibility ≥ negligible
// for some row of the block, and zeroes the others' responsibilities (so
// that the moments are the sums over the listed components exactly).
func (e *gaussEval) activeComponents() {
	kk := e.kk
	e.active, e.at = e.active[:0], make([]int, kk)
	for k := range kk {
		e.at[k] = -1
		for i := 0; i < e.nb; i++ {
			if !(e.logr[i*kk+k] < negligible) { // NaN stays in, to be reported
				e.at[k] = len(e.active)
				e.active = append(e.active, k)
				break
			}
		}
		if e.at[k] < 0 {
			for i := 0; i < e.nb; i++ {
				e.logr[i*kk+k] = 0
			}
		}
	}
}

func (e *gaussEval) allocMoments() {
	nb, d, kk := e.nb, e.d, e.kk
	if e.needS {
		e.score = make([]float64, nb*d)
		if e.needDev {
			e.sks = make([]float64, len(e.active)*nb*d)
		} else {
			e.sks = make([]float64, nb*d) // one S_k at a time
		}
	}
	if e.needM {
		e.ybar = make([]float64, nb*d)
		e.m2 = make([]float64, nb)
	}
	e.coef = make([]float64, nb*d)
	e.out = make([]float64, nb*d)
	e.trCinv = make([]float64, kk)
	for k := range kk {
		_, ns, nr := e.g.dims(k)
		for _, cj := range e.cs[k] {
			e.trCinv[k] += 1 / cj
		}
		e.trCinv[k] += float64(nr)*e.cp[k].inv + float64(ns)*e.cp[k].idleInv
	}
}

// addComponentScore sets S_k = −(A U_kᵀ + D/c⊥ + (1/c_S − 1/c⊥) D_S) with
// A = Z∘(1/c − 1/c⊥) and adds r_k S_k to the score; D is component k's.
func (e *gaussEval) addComponentScore(k int) {
	g, d, kk, nb := e.g, e.d, e.kk, e.nb
	r := g.Rank(k)
	c, z, cs, coef, dbuf, logr, score := e.cp[k], e.zs[k], e.cs[k], e.coef, e.dbuf, e.logr, e.score
	for i := 0; i < nb; i++ {
		for j := 0; j < r; j++ {
			coef[i*r+j] = z[i*r+j] * (1/cs[j] - c.inv)
		}
	}
	sk := e.sks[:nb*d]
	if e.needDev {
		p := e.at[k]
		sk = e.sks[p*nb*d : (p+1)*nb*d]
	}
	gemmFn(blas.NoTrans, blas.Trans, 1, general(nb, r, coef[:nb*r]), denseGeneral(g.u[k]), 0, general(nb, d, sk))
	for i := 0; i < nb; i++ {
		row, di := sk[i*d:(i+1)*d], dbuf[i*d:(i+1)*d]
		for j := range row {
			row[j] += di[j] * c.inv
		}
		for _, j := range g.idle[k] {
			row[j] += di[j] * (c.idleInv - c.inv)
		}
		w, sc := logr[i*kk+k], score[i*d:(i+1)*d]
		for j := range row {
			row[j] = -row[j]
			sc[j] += w * row[j]
		}
	}
}

// addComponentMean adds r_k m_k to ȳ and r_k (tr P_k + ‖m_k‖²) to the
// second moment, with the posterior mean
// m_k = μ_k + α(B U_kᵀ + (ρ/c⊥) D + (ν/c_S − ρ/c⊥) D_S), B = Z∘(λ/c − ρ/c⊥),
// and P_k the posterior covariance; D is component k's.
func (e *gaussEval) addComponentMean(k int) {
	g, d, kk, nb, s2, a := e.g, e.d, e.kk, e.nb, e.s2, e.a
	r, ns, nr := g.dims(k)
	c, z, cs, coef, dbuf, out, ybar, m2, logr := e.cp[k], e.zs[k], e.cs[k], e.coef, e.dbuf, e.out, e.ybar, e.m2, e.logr
	rhoInv := g.rho[k] * c.inv
	nuInv := g.nu[k] * c.idleInv
	trP := float64(nr)*rhoInv*s2 + float64(ns)*nuInv*s2
	for j, l := range g.lam[k] {
		trP += l * s2 / cs[j]
	}
	for i := 0; i < nb; i++ {
		for j := 0; j < r; j++ {
			coef[i*r+j] = z[i*r+j] * (g.lam[k][j]/cs[j] - rhoInv)
		}
	}
	gemmFn(blas.NoTrans, blas.Trans, 1, general(nb, r, coef[:nb*r]), denseGeneral(g.u[k]), 0, general(nb, d, out))
	mu := g.means.RawRowView(k)
	for i := 0; i < nb; i++ {
		row, di, yb := out[i*d:(i+1)*d], dbuf[i*d:(i+1)*d], ybar[i*d:(i+1)*d]
		for j := range row {
			row[j] += rhoInv * di[j]
		}
		for _, j := range g.idle[k] {
			row[j] += (nuInv - rhoInv) * di[j]
		}
		w := logr[i*kk+k]
		mm := 0.0
		for j := range row {
			mk := mu[j] + a*row[j]
			yb[j] += w * mk
			mm += mk * mk
		}
		m2[i] += w * (trP + mm)
	}
}

// writeMoments copies the denoiser, second moment and score into rows
// [lo, lo+nb) of res.
func (e *gaussEval) writeMoments(res *Result, lo int) {
	nb, d := e.nb, e.d
	if res.Denoiser != nil {
		for i := 0; i < nb; i++ {
			copy(res.Denoiser.RawRowView(lo+i), e.ybar[i*d:(i+1)*d])
		}
	}
	if res.SecondMoment != nil {
		copy(res.SecondMoment[lo:lo+nb], e.m2)
	}
	if res.Score != nil {
		for i := 0; i < nb; i++ {
			copy(res.Score.RawRowView(lo+i), e.score[i*d:(i+1)*d])
		}
	}
}

// deviations replaces every S_k by S_k − s.
func (e *gaussEval) deviations() {
	n := e.nb * e.d
	for p := range e.active {
		sk := e.sks[p*n : (p+1)*n]
		for i := range sk {
			sk[i] -= e.score[i]
		}
	}
}

// trace is row i's tr F = Σ_k r_k (tr C_k⁻¹ − ‖S_k − s‖²).
func (e *gaussEval) trace(i int) float64 {
	nb, d := e.nb, e.d
	tr := 0.0
	for p, k := range e.active {
		w := e.logr[i*e.kk+k]
		dev := e.sks[p*nb*d+i*d : p*nb*d+(i+1)*d]
		tr += w * (e.trCinv[k] - dot(dev, dev))
	}
	return tr
}

// componentAt are a component's variances of the rest and of the idle
// coordinates at one time, and their inverses (0 where the part is empty).
type componentAt struct {
	perp, idle, inv, idleInv float64
}

// diff fills dst [nb, d] with X − α μ_k.
func (g *Gaussian) diff(dst []float64, x *mat.Dense, a float64, k int) {
	mu := g.means.RawRowView(k)
	nb, d := x.RawMatrix().Rows, g.d
	for i := 0; i < nb; i++ {
		row, xi := dst[i*d:(i+1)*d], x.RawRowView(i)
		for j := range row {
			row[j] = xi[j] - a*mu[j]
		}
	}
}
