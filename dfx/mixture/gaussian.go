package mixture

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Gaussian is the mixture q_0 = Σ_k π_k N(μ_k, Σ_k) (the general setting,
// Prop. analytic_general). Its diffusion stays a Gaussian mixture,
// q_t = Σ_k π_k N(α μ_k, C_k), C_k = α² Σ_k + σ² I, so every quantity is in
// closed form.
//
// Each covariance is held in a form whose C_k is diagonal in a known basis
// at every t: Σ_k = U_k diag(λ_k) U_kᵀ + ρ_k P_k + ν_k I_S, with I_S the
// coordinate projection on the component's idle coordinates S_k (pixels
// that never vary in the component, e.g. an image's empty border), U_k a
// d×r_k orthonormal basis orthogonal to them and P_k the projection on what
// U_k and S_k leave. Full covariances (NewGaussian: r_k = d) and low rank
// plus isotropic (probabilistic PCA) are special cases; low rank keeps a
// query cheap at image scale (O(d r_k) per component and point). With
// D = x − αμ_k, z = U_kᵀD, c = α²λ + σ², c⊥ = α²ρ + σ², c_S = α²ν + σ²,
// the component's score is −C_k⁻¹D = −[U_k (z/c − z/c⊥) + D/c⊥ +
// (1/c_S − 1/c⊥) D_S] and its posterior given x_t is N(m_k, P_k) with
// m_k = μ_k + α Σ_k C_k⁻¹ D. Covariances may be singular (λ = 0, ρ = 0):
// a zero covariance is a Dirac component.
//
// Eval runs as blocked matrix products over rows and components: the
// projections on every basis at once (allComponents), then one component at
// a time for those with a responsibility that is not negligible.
type Gaussian struct {
	means *mat.Dense   // [K, d]
	logPi []float64    // [K]
	u     []*mat.Dense // d×r_k, orthonormal columns
	lam   [][]float64  // r_k eigenvalues, ≥ 0
	rho   []float64    // variance of the rest (0 when nothing is left)
	idle  [][]int      // idle coordinates S_k
	nu    []float64    // their variance
	class []int        // label of each component, or nil
	d     int
	all   allComponents // the tables of the one-product pass (prepare)
}

// Component is one Gaussian of a mixture in the form NewLowRank takes.
type Component struct {
	Mean    []float64  // μ [d]
	Basis   *mat.Dense // U: d×r orthonormal columns (r ≥ 1), zero on the idle coordinates
	Lambda  []float64  // λ: the r variances along U (≥ 0)
	Rest    float64    // ρ: variance on what U and Idle leave (≥ 0)
	Idle    []int      // S: idle coordinates, ascending
	IdleVar float64    // ν: their variance (≥ 0)
	Weight  float64    // π, non-negative (normalised over the mixture)
}

// dims are r_k, |S_k| and the rest's dimension d − r_k − |S_k|.
func (g *Gaussian) dims(k int) (r, s, rest int) {
	r = g.Rank(k)
	s = len(g.idle[k])
	return r, s, g.d - r - s
}

// NewGaussian takes K means ([K, d]), K symmetric positive semi-definite
// covariances (d×d) and optional non-negative weights (nil for uniform).
func NewGaussian(means *mat.Dense, covs []*mat.SymDense, weights []float64) (*Gaussian, error) {
	if means == nil || means.IsEmpty() {
		return nil, fmt.Errorf("mixture: no Gaussian components: %w", ErrInput)
	}
	k, d := means.Dims()
	if len(covs) != k {
		return nil, fmt.Errorf("mixture: %d means but %d covariances: %w", k, len(covs), ErrInput)
	}
	if weights != nil && len(weights) != k {
		return nil, fmt.Errorf("mixture: %d weights for %d components: %w", len(weights), k, ErrInput)
	}
	comps := make([]Component, k)
	for i, c := range covs {
		if c == nil || c.SymmetricDim() != d {
			return nil, fmt.Errorf("mixture: covariance %d is not %d×%d: %w", i, d, d, ErrInput)
		}
		u, lam, err := eigenPSD(c, fmt.Sprintf("covariance %d", i))
		if err != nil {
			return nil, err
		}
		comps[i] = Component{Mean: means.RawRowView(i), Basis: u, Lambda: lam, Weight: 1}
		if weights != nil {
			comps[i].Weight = weights[i]
		}
	}
	return NewLowRank(comps)
}

// eigenPSD is the eigendecomposition of a positive semi-definite matrix
// (eigenvalues ascending, clamped at 0); a negative eigenvalue beyond
// rounding or a non-finite entry is an error naming what.
func eigenPSD(c *mat.SymDense, what string) (*mat.Dense, []float64, error) {
	d := c.SymmetricDim()
	scale := 0.0
	for r := 0; r < d; r++ {
		for s := r; s < d; s++ {
			v := c.At(r, s)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("mixture: %s has %v at (%d,%d): %w", what, v, r, s, ErrInput)
			}
			scale = math.Max(scale, math.Abs(v))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		return nil, nil, fmt.Errorf("mixture: %s: eigendecomposition failed: %w", what, ErrInput)
	}
	lam := eig.Values(nil)
	for j, l := range lam {
		if l < -1e-10*math.Max(scale, 1e-300) {
			return nil, nil, fmt.Errorf("mixture: %s has eigenvalue %g < 0 (not positive semi-definite): %w", what, l, ErrInput)
		}
		lam[j] = math.Max(l, 0)
	}
	u := mat.NewDense(d, d, nil)
	eig.VectorsTo(u)
	return u, lam, nil
}

// NewLowRank builds the mixture of the given components (see Gaussian and
// Component); weights are normalised, bad shapes or values are errors.
func NewLowRank(comps []Component) (*Gaussian, error) {
	if len(comps) == 0 || len(comps[0].Mean) == 0 {
		return nil, fmt.Errorf("mixture: no Gaussian components: %w", ErrInput)
	}
	k, d := len(comps), len(comps[0].Mean)
	g := &Gaussian{means: mat.NewDense(k, d, nil), d: d}
	w := make([]float64, k)
	bases := make([]*mat.Dense, k)
	for i, c := range comps {
		if len(c.Mean) != d {
			return nil, fmt.Errorf("mixture: mean %d has dimension %d, mean 0 has %d: %w", i, len(c.Mean), d, ErrInput)
		}
		g.means.SetRow(i, c.Mean)
		w[i] = c.Weight
		if c.Basis == nil {
			return nil, fmt.Errorf("mixture: component %d has no basis: %w", i, ErrInput)
		}
		ud, r := c.Basis.Dims()
		if ud != d {
			return nil, fmt.Errorf("mixture: basis %d has %d rows, want %d: %w", i, ud, d, ErrInput)
		}
		if err := checkFinite(fmt.Sprintf("basis %d", i), c.Basis); err != nil {
			return nil, err
		}
		if err := checkOrthonormal(c.Basis, i); err != nil {
			return nil, err
		}
		if r != len(c.Lambda) || r+len(c.Idle) > d {
			return nil, fmt.Errorf("mixture: component %d: %d basis vectors, %d variances and %d idle coordinates in "+
				"d = %d: %w", i, r, len(c.Lambda), len(c.Idle), d, ErrInput)
		}
		for j, l := range c.Lambda {
			if math.IsNaN(l) || math.IsInf(l, 0) || l < 0 {
				return nil, fmt.Errorf("mixture: variance %d of component %d is %g, want finite and ≥ 0: %w", j, i, l, ErrInput)
			}
		}
		for _, v := range []float64{c.Rest, c.IdleVar} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("mixture: rest or idle variance of component %d is %g, want finite and ≥ 0: %w", i, v, ErrInput)
			}
		}
		for j, s := range c.Idle {
			if s < 0 || s >= d || (j > 0 && s <= c.Idle[j-1]) {
				return nil, fmt.Errorf("mixture: idle coordinates of component %d must ascend within [0, %d): %w", i, d, ErrInput)
			}
			for l := 0; l < r; l++ {
				if math.Abs(c.Basis.At(s, l)) > 1e-9 {
					return nil, fmt.Errorf("mixture: basis %d is not zero on idle coordinate %d: %w", i, s, ErrInput)
				}
			}
		}
		bases[i] = c.Basis
		rest := c.Rest
		if d-r-len(c.Idle) == 0 {
			rest = 0
		}
		g.lam = append(g.lam, slices.Clone(c.Lambda))
		g.rho, g.idle, g.nu = append(g.rho, rest), append(g.idle, slices.Clone(c.Idle)), append(g.nu, c.IdleVar)
	}
	if err := checkFinite("mean", g.means); err != nil {
		return nil, err
	}
	var err error
	if g.logPi, err = normalisedLogWeights(w, k); err != nil {
		return nil, err
	}
	g.prepare(bases)
	return g, nil
}

// checkOrthonormal checks UᵀU = I to 1e-6.
func checkOrthonormal(u *mat.Dense, i int) error {
	_, r := u.Dims()
	var g mat.Dense
	g.Mul(u.T(), u)
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			want := 0.0
			if a == b {
				want = 1
			}
			if math.Abs(g.At(a, b)-want) > 1e-6 {
				return fmt.Errorf("mixture: basis %d has UᵀU[%d,%d] = %g, want %g (columns must be orthonormal): %w", i, a, b, g.At(a, b), want, ErrInput)
			}
		}
	}
	return nil
}

// Dim is d.
func (g *Gaussian) Dim() int { return g.d }

// Components is K.
func (g *Gaussian) Components() int { return len(g.logPi) }

// Rank is r_k, the dimension of component k's explicit basis.
func (g *Gaussian) Rank(k int) int { _, r := g.u[k].Dims(); return r }

// Component returns component k (its slices are the mixture's own: do
// not modify them).
func (g *Gaussian) Component(k int) Component {
	return Component{Mean: g.means.RawRowView(k), Basis: g.u[k], Lambda: g.lam[k], Rest: g.rho[k],
		Idle: g.idle[k], IdleVar: g.nu[k], Weight: math.Exp(g.logPi[k])}
}

// Classes is the label of each component (nil when unlabelled).
func (g *Gaussian) Classes() []int { return g.class }

// SetClasses labels the components (one label ≥ 0 each; nil clears them),
// for Restrict.
func (g *Gaussian) SetClasses(labels []int) error {
	if labels == nil {
		g.class = nil
		return nil
	}
	if len(labels) != g.Components() {
		return fmt.Errorf("mixture: %d labels for %d components: %w", len(labels), g.Components(), ErrInput)
	}
	for i, l := range labels {
		if l < 0 {
			return fmt.Errorf("mixture: label %d of component %d is negative: %w", l, i, ErrInput)
		}
	}
	g.class = append([]int(nil), labels...)
	return nil
}

// Restrict is the mixture of the components labelled c, their weights
// renormalised: the class-conditional q_0(x | c) of a labelled fit.
func (g *Gaussian) Restrict(c int) (*Gaussian, error) {
	if g.class == nil {
		return nil, fmt.Errorf("mixture: Restrict(%d) on a mixture without component labels: %w", c, ErrInput)
	}
	var idx []int
	for k, l := range g.class {
		if l == c {
			idx = append(idx, k)
		}
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("mixture: no component has label %d: %w", c, ErrInput)
	}
	means := mat.NewDense(len(idx), g.d, nil)
	w := make([]float64, len(idx))
	out := &Gaussian{d: g.d, means: means}
	bases := make([]*mat.Dense, len(idx))
	for i, k := range idx {
		means.SetRow(i, g.means.RawRowView(k))
		w[i] = math.Exp(g.logPi[k])
		bases[i] = g.u[k]
		out.lam = append(out.lam, g.lam[k])
		out.rho = append(out.rho, g.rho[k])
		out.idle = append(out.idle, g.idle[k])
		out.nu = append(out.nu, g.nu[k])
		out.class = append(out.class, c)
	}
	var err error
	if out.logPi, err = normalisedLogWeights(w, len(idx)); err != nil {
		return nil, err
	}
	out.prepare(bases)
	return out, nil
}
