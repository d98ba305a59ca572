package ot

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// DefaultTol is the asymmetry rate below which a matrix counts as symmetric:
// far above round-off (≈1e-15 for the affine cases) and far below the
// discretisation-independent asymmetry of non-affine data (≈1e-2).
const DefaultTol = 1e-6

// Verdict is the OT test of one chain's matrix A (Corollary 1).
type Verdict struct {
	Asym        float64 // I(A) = ‖A − Aᵀ‖_F / (√2 ‖A‖_F)
	AsymOffDiag float64 // the published script's I with the diagonal of A zeroed
	AsymInverse float64 // I(A⁻¹): the same rate for the inverse map (NaN if singular)
	MinEig      float64 // smallest eigenvalue of ½(A + Aᵀ)
	OT          bool    // Asym < tol and MinEig > 0
}

// Asymmetry is I(A) = ‖A − Aᵀ‖_F / (√2 ‖A‖_F) (0 for the zero matrix).
func Asymmetry(a mat.Matrix) float64 { return asym(a, false) }

// AsymmetryOffDiag is the published script's variant: the diagonal of A is
// zeroed before both norms.
func AsymmetryOffDiag(a mat.Matrix) float64 { return asym(a, true) }

func asym(a mat.Matrix, offDiag bool) float64 {
	r, c := a.Dims()
	if r != c {
		panic("ot: asymmetry of a non-square matrix")
	}
	var num, den float64
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			if offDiag && i == j {
				continue
			}
			v := a.At(i, j)
			den += v * v
			u := v - a.At(j, i)
			num += u * u
		}
	}
	if den == 0 {
		return 0
	}
	return math.Sqrt(num) / (math.Sqrt2 * math.Sqrt(den))
}

// MinEigSym is the smallest eigenvalue of the symmetric part ½(A + Aᵀ).
func MinEigSym(a mat.Matrix) float64 {
	n, _ := a.Dims()
	s := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			s.SetSym(i, j, 0.5*(a.At(i, j)+a.At(j, i)))
		}
	}
	var e mat.EigenSym
	if !e.Factorize(s, false) {
		return math.NaN()
	}
	v := e.Values(nil)
	return v[0] // ascending
}

// Judge tests one matrix; tol ≤ 0 means DefaultTol.
func Judge(a mat.Matrix, tol float64) Verdict {
	if tol <= 0 {
		tol = DefaultTol
	}
	v := Verdict{Asym: Asymmetry(a), AsymOffDiag: AsymmetryOffDiag(a), MinEig: MinEigSym(a), AsymInverse: math.NaN()}
	var inv mat.Dense
	if err := inv.Inverse(a); err == nil {
		v.AsymInverse = Asymmetry(&inv)
	}
	v.OT = v.Asym < tol && v.MinEig > 0
	return v
}

// Stat is the mean, standard deviation (n−1) and worst (largest) value of a
// per-chain figure.
type Stat struct{ Mean, Std, Worst float64 }

func stat(xs []float64, worstIsMin bool) Stat {
	n := float64(len(xs))
	if n == 0 {
		return Stat{math.NaN(), math.NaN(), math.NaN()}
	}
	var s Stat
	s.Worst = xs[0]
	for _, x := range xs {
		s.Mean += x
		if (!worstIsMin && x > s.Worst) || (worstIsMin && x < s.Worst) {
			s.Worst = x
		}
	}
	s.Mean /= n
	if n > 1 {
		for _, x := range xs {
			s.Std += (x - s.Mean) * (x - s.Mean)
		}
		s.Std = math.Sqrt(s.Std / (n - 1))
	}
	return s
}

// Summary aggregates the verdicts of many chains.
type Summary struct {
	Chains      int
	Asym        Stat // worst = largest
	AsymOffDiag Stat
	AsymInverse Stat
	MinEig      Stat    // worst = smallest
	FailFrac    float64 // fraction of chains that are not OT-compatible
	OT          bool    // every chain is OT-compatible
}

// Summarise aggregates verdicts.
func Summarise(vs []Verdict) Summary {
	s := Summary{Chains: len(vs)}
	a, o, inv, e := make([]float64, len(vs)), make([]float64, len(vs)), make([]float64, len(vs)), make([]float64, len(vs))
	fail := 0
	for i, v := range vs {
		a[i], o[i], inv[i], e[i] = v.Asym, v.AsymOffDiag, v.AsymInverse, v.MinEig
		if !v.OT {
			fail++
		}
	}
	s.Asym, s.AsymOffDiag, s.AsymInverse, s.MinEig = stat(a, false), stat(o, false), stat(inv, false), stat(e, true)
	if len(vs) > 0 {
		s.FailFrac = float64(fail) / float64(len(vs))
	}
	s.OT = len(vs) > 0 && fail == 0
	return s
}

// Word is the verdict in words: "✓ OT", or "✗ (x% fail)".
func (s Summary) Word() string { return verdictWord(s) }
