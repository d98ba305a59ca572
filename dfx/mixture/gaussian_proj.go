package mixture

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"
)

// allComponents holds what lets Eval take every component's projections
// and distances from a few large products per chunk of queries instead of
// one small product per component (small products are bound by packing):
// with the data centred on the mean of the means m̄ (x' = x − αm̄,
// μ'_k = μ_k − m̄, so that D_k = x' − αμ'_k and the expansions below lose
// few digits),
//
//	Z_k = X'·U_k − α U_kᵀμ'_k  (all k: X'·[U_1 … U_K])
//	‖D_k‖² = ‖x'‖² − 2α x'·μ'_k + α²‖μ'_k‖²
//	‖D_k,S‖² = Σ_S x'² − 2α Σ_S x'μ'_k + α² Σ_S μ'_k²  (S = S_k, masks as a table)
type allComponents struct {
	ucat     *mat.Dense // [d, Σr_k]: the bases side by side; g.u[k] are views into it
	off      []int      // ucat's column of U_k's first vector
	centre   []float64  // m̄ [d]
	uMu      []float64  // U_kᵀμ'_k [Σr_k], in ucat's column order
	meansT   []float64  // [d, 2K]: columns μ'_k, then μ'_k on S_k (0 elsewhere)
	maskT    []float64  // [d, K]: 1 on S_k; nil when no component has idle coordinates
	norm     []float64  // ‖μ'_k‖²
	idleNorm []float64  // Σ_{S_k} μ'_k²
}

// prepare lays the bases side by side (g.u then views into the one
// buffer, so no basis is held twice) and fills the x-independent tables of
// allComponents; g's means and idle coordinates are set.
func (g *Gaussian) prepare(bases []*mat.Dense) {
	kk, d := len(bases), g.d
	all := allComponents{off: make([]int, kk+1), centre: make([]float64, d),
		meansT: make([]float64, d*2*kk), norm: make([]float64, kk), idleNorm: make([]float64, kk)}
	for k, u := range bases {
		_, r := u.Dims()
		all.off[k+1] = all.off[k] + r
	}
	cols := all.off[kk]
	all.ucat = mat.NewDense(d, cols, nil)
	g.u = make([]*mat.Dense, kk)
	for k, u := range bases {
		_, r := u.Dims()
		view := all.ucat.Slice(0, d, all.off[k], all.off[k]+r).(*mat.Dense)
		view.Copy(u)
		g.u[k] = view
	}
	for k := range kk {
		for j, v := range g.means.RawRowView(k) {
			all.centre[j] += v / float64(kk)
		}
	}
	centred := make([]float64, d)
	all.uMu = make([]float64, cols)
	for k := range kk {
		for j, v := range g.means.RawRowView(k) {
			centred[j] = v - all.centre[j]
			all.meansT[j*2*kk+k] = centred[j]
			all.norm[k] += centred[j] * centred[j]
		}
		mulTVec(all.uMu[all.off[k]:all.off[k+1]], g.u[k], centred)
		if len(g.idle[k]) > 0 && all.maskT == nil {
			all.maskT = make([]float64, d*kk)
		}
		for _, j := range g.idle[k] {
			all.maskT[j*kk+k] = 1
			all.meansT[j*2*kk+kk+k] = centred[j]
			all.idleNorm[k] += centred[j] * centred[j]
		}
	}
	g.all = all
}

// projections are one chunk of queries' Z_k and squared distances to
// every component, from allComponents' products.
type projections struct {
	cols int       // Σr_k
	z    []float64 // [n, cols]: Z_k = (x − αμ_k)ᵀU_k at columns off[k]
	dist []float64 // [n, K]: ‖x − αμ_k‖²
	idle []float64 // [n, K]: ‖(x − αμ_k)_{S_k}‖² (nil: no idle coordinates)
}

// projectAll computes the projections of the rows of x at α = a.
func (g *Gaussian) projectAll(x *mat.Dense, a float64) *projections {
	all, d, kk := &g.all, g.d, g.Components()
	n, _ := x.Dims()
	cols := all.off[kk]
	xc := make([]float64, n*d) // x'
	xx := make([]float64, n)   // ‖x'‖²
	for i := 0; i < n; i++ {
		row := xc[i*d : (i+1)*d]
		for j, v := range x.RawRowView(i) {
			row[j] = v - a*all.centre[j]
		}
		xx[i] = dot(row, row)
	}
	p := &projections{cols: cols, z: make([]float64, n*cols), dist: make([]float64, n*kk)}
	gemmFn(blas.NoTrans, blas.NoTrans, 1, general(n, d, xc), denseGeneral(all.ucat), 0, general(n, cols, p.z))
	for i := 0; i < n; i++ {
		z := p.z[i*cols : (i+1)*cols]
		for j, v := range all.uMu {
			z[j] -= a * v
		}
	}
	xm := make([]float64, n*2*kk) // x'·μ'_k, then Σ_S x'μ'_k
	gemmFn(blas.NoTrans, blas.NoTrans, 1, general(n, d, xc), general(d, 2*kk, all.meansT), 0, general(n, 2*kk, xm))
	for i := 0; i < n; i++ {
		for k := range kk {
			p.dist[i*kk+k] = math.Max(xx[i]-2*a*xm[i*2*kk+k]+a*a*all.norm[k], 0)
		}
	}
	if all.maskT == nil {
		return p
	}
	for i := range xc {
		xc[i] *= xc[i]
	}
	p.idle = make([]float64, n*kk)
	gemmFn(blas.NoTrans, blas.NoTrans, 1, general(n, d, xc), general(d, kk, all.maskT), 0, general(n, kk, p.idle))
	for i := 0; i < n; i++ {
		for k := range kk {
			v := &p.idle[i*kk+k]
			*v = math.Max(*v-2*a*xm[i*2*kk+kk+k]+a*a*all.idleNorm[k], 0)
		}
	}
	return p
}

// logDensityProjected is logDensity from the block's rows of e.proj.
func (e *gaussEval) logDensityProjected(k int) {
	p, kk, r := e.proj, e.kk, e.g.Rank(k)
	off := e.g.all.off[k]
	for i := 0; i < e.nb; i++ {
		row := e.prow + i
		dS := 0.0
		if p.idle != nil {
			dS = p.idle[row*kk+k]
		}
		e.setLogDensity(i, k, p.z[row*p.cols+off:row*p.cols+off+r], p.dist[row*kk+k], dS)
	}
}

// setLogDensity sets logr[i, k] from row i's Z_k, ‖D_k‖² and ‖D_k,S‖².
func (e *gaussEval) setLogDensity(i, k int, z []float64, dd, dS float64) {
	g, cs, c := e.g, e.cs[k], e.cp[k]
	_, _, nr := g.dims(k)
	m, zz := 0.0, 0.0
	for j, zj := range z {
		m += zj * zj / cs[j]
		zz += zj * zj
	}
	if nr > 0 {
		m += math.Max(dd-zz-dS, 0) * c.inv
	}
	m += dS * c.idleInv
	e.logr[i*e.kk+k] = g.logPi[k] - 0.5*(m+e.logdet[k]+float64(e.d)*math.Log(2*math.Pi))
}

// projectedZ copies the block's Z_k out of e.proj into e.zs[k] (the
// layout the component's score and mean take).
func (e *gaussEval) projectedZ(k int) {
	p, r := e.proj, e.g.Rank(k)
	off := e.g.all.off[k]
	zk := make([]float64, e.nb*r)
	for i := 0; i < e.nb; i++ {
		row := e.prow + i
		copy(zk[i*r:(i+1)*r], p.z[row*p.cols+off:])
	}
	e.zs[k] = zk
}
