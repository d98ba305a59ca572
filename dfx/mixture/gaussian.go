package mixture

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Gaussian is the mixture q_0 = Σ_k π_k N(μ_k, Σ_k) (the general setting,
// Prop. analytic_general). Its diffusion stays a Gaussian mixture,
// q_t = Σ_k π_k N(α μ_k, C_k), C_k = α² Σ_k + σ² I, so every quantity is in
// closed form. With Σ_k = U_k Λ_k U_kᵀ, the posterior of component k given
// x_t is N(m_k, P_k) with m_k = μ_k + α U_k diag(λ/c) U_kᵀ (x − α μ_k),
// P_k = U_k diag(λ σ²/c) U_kᵀ, c = α² λ + σ². Covariances may be singular
// (λ = 0): a zero covariance is a Dirac component.
type Gaussian struct {
	means [][]float64
	logPi []float64
	u     []*mat.Dense // eigenvectors of Σ_k (columns)
	lam   [][]float64  // eigenvalues of Σ_k, clamped at 0
	d     int
}

// NewGaussian takes K means ([K, d]), K symmetric positive semi-definite
// covariances (d×d) and optional non-negative weights (nil for uniform).
func NewGaussian(means *mat.Dense, covs []*mat.SymDense, weights []float64) (*Gaussian, error) {
	if means == nil || means.IsEmpty() {
		return nil, fmt.Errorf("mixture: no Gaussian components: %w", ErrInput)
	}
	k, d := means.Dims()
	if err := checkFinite("mean", means); err != nil {
		return nil, err
	}
	if len(covs) != k {
		return nil, fmt.Errorf("mixture: %d means but %d covariances: %w", k, len(covs), ErrInput)
	}
	logPi, err := normalisedLogWeights(weights, k)
	if err != nil {
		return nil, err
	}
	g := &Gaussian{logPi: logPi, d: d}
	for i, c := range covs {
		if c == nil || c.SymmetricDim() != d {
			return nil, fmt.Errorf("mixture: covariance %d is not %d×%d: %w", i, d, d, ErrInput)
		}
		scale := 0.0
		for r := 0; r < d; r++ {
			for s := r; s < d; s++ {
				v := c.At(r, s)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("mixture: covariance %d has %v at (%d,%d): %w", i, v, r, s, ErrInput)
				}
				scale = math.Max(scale, math.Abs(v))
			}
		}
		var eig mat.EigenSym
		if !eig.Factorize(c, true) {
			return nil, fmt.Errorf("mixture: covariance %d: eigendecomposition failed: %w", i, ErrInput)
		}
		lam := eig.Values(nil)
		for j, l := range lam {
			if l < -1e-10*math.Max(scale, 1e-300) {
				return nil, fmt.Errorf("mixture: covariance %d has eigenvalue %g < 0 (not positive semi-definite): %w", i, l, ErrInput)
			}
			lam[j] = math.Max(l, 0)
		}
		u := mat.NewDense(d, d, nil)
		eig.VectorsTo(u)
		g.u = append(g.u, u)
		g.lam = append(g.lam, lam)
		g.means = append(g.means, append([]float64(nil), means.RawRowView(i)...))
	}
	return g, nil
}

// Dim is d.
func (g *Gaussian) Dim() int { return g.d }

// Components is K.
func (g *Gaussian) Components() int { return len(g.means) }

// Eval implements Mixture.
func (g *Gaussian) Eval(q Query) (*Result, error) {
	d := g.d
	b, c, err := checkQuery(q, d)
	if err != nil {
		return nil, err
	}
	a, s2 := c.Alpha, c.Sigma*c.Sigma
	res := newResult(q.Want, b, d)
	kk := g.Components()
	logr := make([]float64, kk)
	// Per component, in its eigenbasis: z = Uᵀ(x − αμ), cdiag = α²λ + σ².
	zs := make([][]float64, kk)
	cs := make([][]float64, kk)
	for k := range cs {
		zs[k] = make([]float64, d)
		cs[k] = make([]float64, d)
		for j, l := range g.lam[k] {
			cs[k][j] = a*a*l + s2
		}
	}
	diff := make([]float64, d)
	mk := make([]float64, d)
	tmp := make([]float64, d)
	sk := make([][]float64, kk) // component scores −C_k⁻¹(x − αμ_k)
	for k := range sk {
		sk[k] = make([]float64, d)
	}
	rs := make([]float64, kk)
	p := &posterior{ybar: make([]float64, d)}
	dr := &direct{score: make([]float64, d), matvec: make([]float64, d)}
	p.direct = dr
	if q.Want&Full != 0 {
		dr.full = mat.NewSymDense(d, nil)
	}
	for i := 0; i < b; i++ {
		x := q.X.RawRowView(i)
		var v []float64
		if q.V != nil {
			v = vecRow(q.V, i)
		}
		lmax := math.Inf(-1)
		for k := 0; k < kk; k++ {
			for j := range diff {
				diff[j] = x[j] - a*g.means[k][j]
			}
			mulTVec(zs[k], g.u[k], diff)
			l := g.logPi[k]
			for j, zj := range zs[k] {
				l -= 0.5 * (zj*zj/cs[k][j] + math.Log(2*math.Pi*cs[k][j]))
				tmp[j] = -zj / cs[k][j]
			}
			mulVec(sk[k], g.u[k], tmp)
			logr[k] = l
			lmax = math.Max(lmax, l)
		}
		sum := 0.0
		for k := range logr {
			sum += math.Exp(logr[k] - lmax)
		}
		p.logq = lmax + math.Log(sum)
		clear(p.ybar)
		clear(dr.score)
		p.m2 = 0
		for k := 0; k < kk; k++ {
			r := math.Exp(logr[k] - p.logq)
			rs[k] = r
			if r == 0 {
				continue
			}
			// m_k = μ_k + α U diag(λ/c) z, tr P_k = Σ λσ²/c
			for j := range tmp {
				tmp[j] = a * g.lam[k][j] / cs[k][j] * zs[k][j]
			}
			mulVec(mk, g.u[k], tmp)
			trP := 0.0
			for j := range mk {
				mk[j] += g.means[k][j]
				trP += g.lam[k][j] * s2 / cs[k][j]
			}
			for j := range mk {
				p.ybar[j] += r * mk[j]
				dr.score[j] += r * sk[k][j]
			}
			p.m2 += r * (trP + dot(mk, mk))
		}
		g.fisher(dr, rs, sk, cs, v, q.Want)
		finish(res, i, c, x, v, p)
	}
	if err := checkFiniteResult(res); err != nil {
		return nil, err
	}
	return res, nil
}

// fisher fills the Fisher outputs of dr in the form
// F = Σ_k r_k C_k⁻¹ − Σ_k r_k (s_k − s)(s_k − s)ᵀ, s = Σ_k r_k s_k,
// equal to Prop. analytic_general's I/σ² − (α²/σ⁴) Cov[x_0|x_t] but free of its
// cancellation when σ ≪ the component scales.
func (g *Gaussian) fisher(dr *direct, rs []float64, sk, cs [][]float64, v []float64, want What) {
	d := g.d
	dr.trace = 0
	clear(dr.matvec)
	if dr.full != nil {
		scaleSym(dr.full, 0)
	}
	dev := make([]float64, d)
	tmp := make([]float64, d)
	cinv := make([]float64, d)
	for k, r := range rs {
		if r == 0 {
			continue
		}
		for j := range dev {
			dev[j] = sk[k][j] - dr.score[j]
			dr.trace += r / cs[k][j]
		}
		dr.trace -= r * dot(dev, dev)
		if want&MatVec != 0 {
			mulTVec(tmp, g.u[k], v)
			for j := range tmp {
				tmp[j] /= cs[k][j]
			}
			mulVec(cinv, g.u[k], tmp)
			dv := dot(dev, v)
			for j := range dr.matvec {
				dr.matvec[j] += r * (cinv[j] - dv*dev[j])
			}
		}
		if dr.full != nil {
			for i := 0; i < d; i++ {
				for j := i; j < d; j++ {
					s := -dev[i] * dev[j]
					for l := 0; l < d; l++ {
						s += g.u[k].At(i, l) * g.u[k].At(j, l) / cs[k][l]
					}
					dr.full.SetSym(i, j, dr.full.At(i, j)+r*s)
				}
			}
		}
	}
}

// mulVec sets dst = U x; mulTVec sets dst = Uᵀ x.
func mulVec(dst []float64, u *mat.Dense, x []float64) {
	for i := range dst {
		dst[i] = dot(u.RawRowView(i), x)
	}
}

func mulTVec(dst []float64, u *mat.Dense, x []float64) {
	clear(dst)
	for i, xi := range x {
		row := u.RawRowView(i)
		for j := range dst {
			dst[j] += row[j] * xi
		}
	}
}
