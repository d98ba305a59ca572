// Package mixture computes, in float64, the exact quantities of a diffused
// data mixture q_t(x) = Σ_i π_i N(x; α_t y_i, σ_t² I) (Dirac components,
// paper eq. dirac_initial_dist) or q_t = Σ_k π_k N(α_t μ_k, α_t² Σ_k + σ_t² I)
// (Gaussian components, the general setting of Prop. analytic_general): log q_t with its
// normalising constant, the score, the denoiser ȳ = E[x_0 | x_t], the
// posterior second moment E[‖x_0‖² | x_t] (the DF-TM target times d), and the
// diffusion Fisher F = −∇² log q_t = I/σ² − (α²/σ⁴) Cov[x_0 | x_t]
// (Props. analytic_dirac and analytic_general) as a full matrix, its trace
// (Prop. trace_matching) and products F v.
//
// These are the ground truth that every learned estimator in dfx is scored
// against. Shapes: data [N, d], queries [B, d].
package mixture

import (
	"errors"
	"fmt"
	"math"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// What selects the outputs of Eval; combine with |.
type What uint

const (
	LogProb      What = 1 << iota // log q_t(x), normalised
	Score                         // ∇ log q_t(x) = −(x − α ȳ)/σ²
	Denoiser                      // ȳ = E[x_0 | x_t] = Σ w_i y_i
	SecondMoment                  // E[‖x_0‖² | x_t] = Σ w_i ‖y_i‖² (+ tr of component covariances)
	Trace                         // tr F (Prop. trace_matching)
	MatVec                        // F v for the given vectors
	Full                          // F as a d×d matrix per query
)

// Query is one batched evaluation: B points X at one time, given by the
// schedule's coefficients there (only α and σ are used).
type Query struct {
	// At is the time's coefficients: schedule.At(s, t) for a continuous
	// schedule, or a node of a discrete protocol (schedule.Table).
	At schedule.Coefficients
	X  *mat.Dense // [B, d]
	// V holds the vectors for MatVec: [B, d] (one per point), [1, d]
	// (the same vector for every point) or [m·B, d] (m per point, point
	// i's j-th at row j·B + i, e.g. a point's Hutchinson probes: the
	// responsibilities are computed once for all m).
	V    *mat.Dense
	Want What
}

// Result holds what the query asked for; fields not asked for are nil.
type Result struct {
	LogProb      []float64       // [B]
	Score        *mat.Dense      // [B, d]
	Denoiser     *mat.Dense      // [B, d]
	SecondMoment []float64       // [B]
	Trace        []float64       // [B]
	MatVec       *mat.Dense      // [B, d], or [m·B, d] as V
	Fisher       []*mat.SymDense // B matrices d×d
}

// Mixture is a data distribution whose diffused quantities are known exactly.
type Mixture interface {
	// Dim is the data dimension d.
	Dim() int
	// Eval computes the requested quantities; bad input is an error.
	Eval(q Query) (*Result, error)
}

// ErrInput is wrapped by every error about bad data or queries.
var ErrInput = errors.New("invalid input")

// ErrNonFinite is wrapped by the error Eval returns when a result is NaN
// or infinite: data or points too large for float64 at that time (e.g.
// coordinates of 1e300, whose squared distances overflow).
var ErrNonFinite = errors.New("non-finite result")

// checkFiniteResult returns an error naming the first NaN or ±Inf of res.
func checkFiniteResult(res *Result) error {
	bad := func(name string, i int, v float64) error {
		return fmt.Errorf("mixture: %s of query %d is %g: the data or points are too large for float64 at this time: %w", name, i, v, ErrNonFinite)
	}
	vecs := []struct {
		name string
		v    []float64
	}{{"log q_t", res.LogProb}, {"E[‖x₀‖²|x_t]", res.SecondMoment}, {"tr F", res.Trace}}
	for _, f := range vecs {
		for i, v := range f.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad(f.name, i, v)
			}
		}
	}
	mats := []struct {
		name string
		m    *mat.Dense
	}{{"the score", res.Score}, {"the denoiser", res.Denoiser}, {"F v", res.MatVec}}
	for _, f := range mats {
		if f.m == nil {
			continue
		}
		raw := f.m.RawMatrix()
		for i := range raw.Rows {
			for _, v := range raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols] {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return bad(f.name, i, v)
				}
			}
		}
	}
	for i, f := range res.Fisher {
		if f == nil {
			continue
		}
		for _, v := range f.RawSymmetric().Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("the Fisher matrix", i, v)
			}
		}
	}
	return nil
}

// checkQuery validates a query against dimension d and returns B and the
// coefficients of its time.
func checkQuery(q Query, d int) (int, schedule.Coefficients, error) {
	b, err := checkPoints(q, d)
	if err != nil {
		return 0, schedule.Coefficients{}, err
	}
	c := q.At
	if err := c.Check(); err != nil {
		return 0, c, fmt.Errorf("mixture: %w: %w", err, ErrInput)
	}
	return b, c, nil
}

func checkPoints(q Query, d int) (int, error) {
	if q.X == nil {
		return 0, fmt.Errorf("mixture: no query points: %w", ErrInput)
	}
	b, dx := q.X.Dims()
	if b == 0 {
		return 0, fmt.Errorf("mixture: empty query batch: %w", ErrInput)
	}
	if dx != d {
		return 0, fmt.Errorf("mixture: data of dim %d, query dim %d: %w", d, dx, ErrInput)
	}
	if err := checkFinite("query", q.X); err != nil {
		return 0, err
	}
	if q.Want == 0 {
		return 0, fmt.Errorf("mixture: query asks for nothing: %w", ErrInput)
	}
	if q.Want&MatVec != 0 {
		if q.V == nil {
			return 0, fmt.Errorf("mixture: MatVec needs vectors V: %w", ErrInput)
		}
		vb, vd := q.V.Dims()
		if vd != d || (vb != 1 && vb%b != 0) {
			return 0, fmt.Errorf("mixture: vectors of shape [%d, %d], want [%d, %d], [1, %d] or [m·%d, %d]: %w", vb, vd, b, d, d, b, d, ErrInput)
		}
		if err := checkFinite("vector", q.V); err != nil {
			return 0, err
		}
	}
	return b, nil
}

// vectorsPerPoint is m, the MatVec vectors a point of q's b has (1 for
// one vector shared by all).
func vectorsPerPoint(q Query, b int) int {
	if q.V == nil {
		return 1
	}
	return max(1, q.V.RawMatrix().Rows/b)
}

func checkFinite(what string, m *mat.Dense) error {
	r, c := m.Dims()
	for i := 0; i < r; i++ {
		for j, v := range m.RawRowView(i)[:c] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("mixture: %s row %d col %d is %v: %w", what, i, j, v, ErrInput)
			}
		}
	}
	return nil
}

// normalisedLogWeights turns optional non-negative weights into log π_i
// (nil means uniform). At least one weight must be positive.
func normalisedLogWeights(w []float64, n int) ([]float64, error) {
	out := make([]float64, n)
	if w == nil {
		for i := range out {
			out[i] = -math.Log(float64(n))
		}
		return out, nil
	}
	if len(w) != n {
		return nil, fmt.Errorf("mixture: %d weights for %d components: %w", len(w), n, ErrInput)
	}
	top := 0.0
	for i, v := range w {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("mixture: weight %d is %v, must be finite and non-negative: %w", i, v, ErrInput)
		}
		top = max(top, v)
	}
	if top == 0 {
		return nil, fmt.Errorf("mixture: every weight is 0, at least one must be positive: %w", ErrInput)
	}
	// Scaled by the largest, the weights sum to a value in [1, n]: finite
	// positive weights never overflow the sum (1e308 each is a valid input).
	sum := 0.0
	for _, v := range w {
		sum += v / top
	}
	for i, v := range w {
		out[i] = math.Log(v/top) - math.Log(sum) // log 0 = −Inf: a component that never wins
	}
	return out, nil
}

// newResult allocates the outputs q asks for.
func newResult(q Query, b, d int) *Result {
	want := q.Want
	r := &Result{}
	if want&LogProb != 0 {
		r.LogProb = make([]float64, b)
	}
	if want&Score != 0 {
		r.Score = mat.NewDense(b, d, nil)
	}
	if want&Denoiser != 0 {
		r.Denoiser = mat.NewDense(b, d, nil)
	}
	if want&SecondMoment != 0 {
		r.SecondMoment = make([]float64, b)
	}
	if want&Trace != 0 {
		r.Trace = make([]float64, b)
	}
	if want&MatVec != 0 {
		r.MatVec = mat.NewDense(b*vectorsPerPoint(q, b), d, nil)
	}
	if want&Full != 0 {
		r.Fisher = make([]*mat.SymDense, b)
	}
	return r
}

// posterior is what every output is made of, for one query point:
// ȳ = E[x_0|x_t], m2 = E[‖x_0‖²|x_t], cv = E[⟨x_0,v⟩ x_0 | x_t],
// full = E[x_0 x_0ᵀ | x_t], and the log normaliser.
type posterior struct {
	ybar, cv []float64
	m2, logq float64
	full     *mat.SymDense
}

// finish writes row b of the result from the posterior moments (Props.
// analytic_dirac / analytic_general, trace_matching); x and v are the query point and its vector.
func finish(r *Result, b int, c schedule.Coefficients, x, v []float64, p *posterior) {
	d := len(x)
	a, s2 := c.Alpha, c.Sigma*c.Sigma
	k := a * a / (s2 * s2) // α²/σ⁴
	if r.LogProb != nil {
		r.LogProb[b] = p.logq
	}
	if r.Denoiser != nil {
		copy(r.Denoiser.RawRowView(b), p.ybar)
	}
	if r.SecondMoment != nil {
		r.SecondMoment[b] = p.m2
	}
	if r.Score != nil {
		row := r.Score.RawRowView(b)
		for j := range row {
			row[j] = -(x[j] - a*p.ybar[j]) / s2
		}
	}
	if r.Trace != nil {
		r.Trace[b] = float64(d)/s2 - k*(p.m2-dot(p.ybar, p.ybar))
	}
	if r.MatVec != nil {
		row := r.MatVec.RawRowView(b)
		yv := dot(p.ybar, v)
		for j := range row {
			row[j] = v[j]/s2 - k*(p.cv[j]-yv*p.ybar[j])
		}
	}
	if r.Fisher != nil {
		f := mat.NewSymDense(d, nil)
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				val := -k * (p.full.At(i, j) - p.ybar[i]*p.ybar[j])
				if i == j {
					val += 1 / s2
				}
				f.SetSym(i, j, val)
			}
		}
		r.Fisher[b] = f
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
