// Package adjoint is adjoint-guided DDIM sampling with a pluggable Fisher
// operator (paper sec:ea, "Adjoint optimization sampling", and appendix
// extra_adjoint).
//
// Guidance at a sampler state x_t needs λ_t = ∂L(x̂₀(x_t))/∂x_t, where x̂₀ is
// predicted from x_t by a short inner DDIM solve (η = 0) down to the
// schedule's t_min. Every step, inner and outer, is pfode.DDIMStep with the
// model's noise prediction ε̂(x, t) = −σ(t) ∇log q_t(x): from τ to τ'
// (coefficients α, σ and α', σ'),
//
//	x' = (α'/α) x + (σ' − α'σ/α) ε̂(x, τ).
//
// Since ∂ε̂/∂x = σ F(x, τ) with F = −∇²log q_τ symmetric, the step's
// vector-Jacobian product (pfode.DDIMAdjointStep) is
//
//	λ ← (α'/α) λ + (σ' − α'σ/α) σ F(x, τ) λ,
//
// the discrete form of eq. Adjoint_ODE. Backprop runs it backwards through
// the cached inner states from λ = ∂L/∂x̂₀, so the whole cost beyond the
// inner solve is one Fisher product per inner step, done by a
// score.FisherOperator:
//
//   - score.Exact: a mixture's exact F v (Props. analytic_dirac,
//     analytic_general);
//   - access.VJPMatVec: F v ≈ (1/σ) ∂⟨ε_θ, v⟩/∂x through a network (eq.
//     Adjoint_VJP);
//   - access.DFEA: F v ≈ v/σ² + (α²/σ⁴)(⟨ȳ,v⟩ȳ − ⟨x̂₀,v⟩x̂₀) with ȳ the
//     denoiser already computed by the inner solve and x̂₀ its endpoint
//     (eq. EA_approx): no network pass at all.
//
// The memory is O(n·B·d) for n inner steps: the inner states and their
// denoisers are cached as arrays, no graph is kept.
//
// Guide bundles a schedule, a score.Model (asked for ε̂), an operator and a
// Loss;
// Guide.Gradient exposes λ_t for one state and Guide.Sample is the guided
// outer DDIM loop. Shapes: queries [B, d], row-major *mat.Dense; rows never
// interact.
package adjoint

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// ErrInput is wrapped by every error about bad input: shapes, times,
// configurations and non-finite values. It is mixture.ErrInput, the one
// bad-input sentinel of dfx, so errors.Is matches it whichever package
// returned the error.
var ErrInput = mixture.ErrInput

// NetModel is access.NetModel, a network as a score.Model.
//
// Deprecated: use access.NetModel (this name is kept for the notebooks).
type NetModel = access.NetModel

// Loss evaluates a loss to minimise at predicted endpoints x0 [B, d]: the
// per-row losses [B] and the gradient of each row's loss with respect to
// that row [B, d]. To maximise a reward, pass its negative.
type Loss func(x0 *mat.Dense) (loss []float64, grad *mat.Dense, err error)

// SquaredDistance is the loss L(x₀) = ‖x₀ − target‖²/2 (gradient x₀ − target).
func SquaredDistance(target []float64) Loss {
	target = append([]float64(nil), target...)
	return func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		b, d := x0.Dims()
		if d != len(target) {
			return nil, nil, fmt.Errorf("adjoint: target of dim %d, points of dim %d: %w", len(target), d, ErrInput)
		}
		loss, grad := make([]float64, b), mat.NewDense(b, d, nil)
		for i := range b {
			g := grad.RawRowView(i)
			for j, v := range x0.RawRowView(i)[:d] {
				g[j] = v - target[j]
				loss[i] += 0.5 * g[j] * g[j]
			}
		}
		return loss, grad, nil
	}
}

// Guide is adjoint guidance: the data side (Schedule, Model), the Fisher
// operator of the adjoint pass and the loss. Operator and Loss may be nil
// for unguided sampling.
type Guide struct {
	Schedule schedule.Schedule
	Model    score.Model
	Operator score.FisherOperator
	Loss     Loss
}

// Trajectory is a cached inner DDIM solve from x_t down to t_min:
// n+1 states x_{τ_0} = x_t, …, x_{τ_n} = x̂₀ at decreasing times τ_i
// (uniform in t), and the denoiser ȳ(x_{τ_i}, τ_i) = (x − σ ε̂)/α of the n
// states a step starts from (what DF-EA needs, and all a step used).
type Trajectory struct {
	At        []schedule.Coefficients // n+1
	States    []*mat.Dense            // n+1, [B, d] each
	Denoisers []*mat.Dense            // n, [B, d] each
}

// Endpoint is x̂₀, the last state.
func (tr *Trajectory) Endpoint() *mat.Dense { return tr.States[len(tr.States)-1] }

// Predict runs the inner DDIM solve of steps steps from (x, t) down to the
// schedule's t_min and caches it (see Trajectory). It costs steps model
// evaluations.
func (g Guide) Predict(x *mat.Dense, t float64, steps int) (*Trajectory, error) {
	if err := g.checkData(); err != nil {
		return nil, err
	}
	if steps < 1 {
		return nil, fmt.Errorf("adjoint: inner solve needs at least 1 step, got %d: %w", steps, ErrInput)
	}
	if _, _, err := checkFinite("state", x); err != nil {
		return nil, err
	}
	lo, _ := g.Schedule.Interval()
	if !(t > lo) {
		return nil, fmt.Errorf("adjoint: inner solve from t = %g, must be above t_min = %g: %w", t, lo, ErrInput)
	}
	grid, err := schedule.TimeGrid(g.Schedule, schedule.GridUniform, lo, t, steps)
	if err != nil {
		return nil, fmt.Errorf("adjoint: %w: %w", err, ErrInput)
	}
	tr := &Trajectory{States: []*mat.Dense{mat.DenseCopyOf(x)}}
	for i, ti := range grid {
		c, err := schedule.At(g.Schedule, ti)
		if err != nil {
			return nil, fmt.Errorf("adjoint: %w: %w", err, ErrInput)
		}
		tr.At = append(tr.At, c)
		if i == 0 {
			continue
		}
		next, ybar, err := g.step(tr.At[i-1], c, tr.States[i-1])
		if err != nil {
			return nil, err
		}
		tr.States = append(tr.States, next)
		tr.Denoisers = append(tr.Denoisers, ybar)
	}
	return tr, nil
}

// step is one DDIM step (pfode.DDIMStep) from c0 to c1 at x with the
// model's ε̂, and the denoiser ȳ = (x − σ ε̂)/α at (x, c0).
func (g Guide) step(c0, c1 schedule.Coefficients, x *mat.Dense) (next, ybar *mat.Dense, err error) {
	b, d := x.Dims()
	ev, err := g.Model.Eval(c0, x, score.WantEps)
	if err == nil && ev.Eps == nil {
		err = fmt.Errorf("no ε̂: %w", ErrInput)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("adjoint: model at t = %g: %w", c0.T, err)
	}
	eps := ev.Eps
	if eb, ed := eps.Dims(); eb != b || ed != d {
		return nil, nil, fmt.Errorf("adjoint: model returned [%d, %d] for [%d, %d] points: %w", eb, ed, b, d, ErrInput)
	}
	if _, _, err := checkFinite("model output", eps); err != nil {
		return nil, nil, err
	}
	next, ybar = mat.DenseCopyOf(x), mat.NewDense(b, d, nil)
	pfode.DDIMStep(next, c0, c1, &score.Eval{Eps: eps})
	score.DenoiserFromEps(ybar, c0, x, eps)
	return next, ybar, nil
}

// Backprop is the discrete adjoint of a cached inner solve (eq.
// Adjoint_ODE, discretised as the DDIM step's exact vector-Jacobian
// product): from λ = lambda0 = ∂L/∂x̂₀ [B, d], for i = n−1, …, 0,
//
//	λ ← (α_{i+1}/α_i) λ + (σ_{i+1} − α_{i+1}σ_i/α_i) σ_i F(x_{τ_i}, τ_i) λ,
//
// with F λ applied by op. It returns λ_{τ_0} = ∂L(x̂₀(x_t))/∂x_t, exact up to
// op's error in F. It costs n operator calls.
func Backprop(tr *Trajectory, op score.FisherOperator, lambda0 *mat.Dense) (*mat.Dense, error) {
	if tr == nil || len(tr.States) < 2 || len(tr.At) != len(tr.States) || len(tr.Denoisers) != len(tr.States)-1 {
		return nil, fmt.Errorf("adjoint: malformed trajectory: %w", ErrInput)
	}
	if op == nil {
		return nil, fmt.Errorf("adjoint: no Fisher operator: %w", ErrInput)
	}
	b, d := tr.States[0].Dims()
	if lb, ld, err := checkFinite("adjoint seed", lambda0); err != nil {
		return nil, err
	} else if lb != b || ld != d {
		return nil, fmt.Errorf("adjoint: seed λ is [%d, %d] for [%d, %d] points: %w", lb, ld, b, d, ErrInput)
	}
	lam := mat.DenseCopyOf(lambda0)
	x0 := tr.Endpoint()
	for i := len(tr.Denoisers) - 1; i >= 0; i-- {
		c0, c1 := tr.At[i], tr.At[i+1]
		fl, err := op.Apply(score.State{At: c0, X: tr.States[i], Denoiser: tr.Denoisers[i], Endpoint: x0}, lam)
		if err != nil {
			return nil, fmt.Errorf("adjoint: operator %s at t = %g: %w", op.Name(), c0.T, err)
		}
		if fb, fd, err := checkFinite("operator output", fl); err != nil {
			return nil, err
		} else if fb != b || fd != d {
			return nil, fmt.Errorf("adjoint: operator %s returned [%d, %d] for [%d, %d]: %w", op.Name(), fb, fd, b, d, ErrInput)
		}
		pfode.DDIMAdjointStep(lam, c0, c1, fl)
	}
	return lam, nil
}

// GradientResult is the adjoint gradient at one state and what it cost.
type GradientResult struct {
	Grad          *mat.Dense  // λ_t = ∂L(x̂₀(x_t))/∂x_t [B, d]
	Loss          []float64   // L(x̂₀) [B]
	Trajectory    *Trajectory // the cached inner solve; Trajectory.Endpoint() is x̂₀
	ModelEvals    int         // inner steps
	OperatorCalls int         // Fisher products (one per inner step)
}

// Gradient is λ_t = ∂L(x̂₀(x_t))/∂x_t for states x [B, d] at time t: the
// inner solve of innerSteps DDIM steps (Predict), the loss and its gradient
// at x̂₀, then the adjoint pass (Backprop) with g.Operator.
func (g Guide) Gradient(x *mat.Dense, t float64, innerSteps int) (*GradientResult, error) {
	if g.Operator == nil || g.Loss == nil {
		return nil, fmt.Errorf("adjoint: guidance needs an Operator and a Loss: %w", ErrInput)
	}
	tr, err := g.Predict(x, t, innerSteps)
	if err != nil {
		return nil, err
	}
	b, d := x.Dims()
	loss, grad, err := g.Loss(tr.Endpoint())
	if err != nil {
		return nil, fmt.Errorf("adjoint: loss: %w", err)
	}
	if len(loss) != b {
		return nil, fmt.Errorf("adjoint: loss returned %d values for %d points: %w", len(loss), b, ErrInput)
	}
	for i, v := range loss {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("adjoint: loss of row %d is %v: %w", i, v, ErrInput)
		}
	}
	if grad == nil {
		return nil, fmt.Errorf("adjoint: loss returned no gradient: %w", ErrInput)
	}
	if gb, gd := grad.Dims(); gb != b || gd != d {
		return nil, fmt.Errorf("adjoint: loss gradient is [%d, %d] for [%d, %d] points: %w", gb, gd, b, d, ErrInput)
	}
	lam, err := Backprop(tr, g.Operator, grad)
	if err != nil {
		return nil, err
	}
	return &GradientResult{Grad: lam, Loss: loss, Trajectory: tr, ModelEvals: innerSteps, OperatorCalls: innerSteps}, nil
}

// checkData checks that the guide has a valid schedule and a model.
func (g Guide) checkData() error {
	if g.Schedule == nil || g.Model == nil {
		return fmt.Errorf("adjoint: guide needs a Schedule and a Model: %w", ErrInput)
	}
	if err := schedule.Validate(g.Schedule); err != nil {
		return fmt.Errorf("adjoint: %w: %w", err, ErrInput)
	}
	return nil
}

// checkFinite checks that m is a non-empty matrix of finite values and
// returns its dimensions.
func checkFinite(what string, m *mat.Dense) (int, int, error) {
	if m == nil || m.IsEmpty() {
		return 0, 0, fmt.Errorf("adjoint: empty %s: %w", what, ErrInput)
	}
	r, c := m.Dims()
	for i := range r {
		for j, v := range m.RawRowView(i)[:c] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, fmt.Errorf("adjoint: %s row %d col %d is %v: %w", what, i, j, v, ErrInput)
			}
		}
	}
	return r, c, nil
}
