package pfode

import "fmt"

// System is an ODE dy/dt = F(t, y) on a flat state y of length Len().
type System interface {
	Len() int
	// Deriv writes F(t, y) into dy; it must not keep y or dy.
	Deriv(t float64, y, dy []float64) error
}

// Method is a one-step scheme: Tableau values (Euler, Heun, RK4, Dopri5)
// and DDIM.
type Method interface {
	Name() string
	// Order is the order of convergence p: the global error is O(hᵖ).
	Order() int
	// step advances y from t to t1 in place and returns the number of
	// evaluations of the system.
	step(sys System, t, t1 float64, y []float64, w *work) (int, error)
}

// Tableau is an explicit Runge–Kutta method in Butcher form:
//
//	k_s = F(t + c_s h, y + h Σ_{l<s} a_{sl} k_l),   y' = y + h Σ_s b_s k_s,
//
// with h = t1 − t (negative when integrating backwards). BErr, if set, are
// the weights of the embedded lower-order solution ŷ' = y + h Σ b̂_s k_s
// whose difference y' − ŷ' estimates the local error (adaptive stepping).
// FSAL marks methods whose last stage is F(t1, y').
type Tableau struct {
	Label string
	A     [][]float64 // A[s] holds a_{s0} … a_{s,s−1}
	B, C  []float64
	BErr  []float64
	P     int // order
	FSAL  bool
}

func (tb *Tableau) Name() string   { return tb.Label }
func (tb *Tableau) String() string { return tb.Label }
func (tb *Tableau) Order() int     { return tb.P }

// Stages is the number of evaluations of one step.
func (tb *Tableau) Stages() int { return len(tb.B) }

// The classical tableaux.
var (
	// Euler is y' = y + h F(t, y): order 1, one evaluation.
	Euler = &Tableau{Label: "euler", A: [][]float64{{}}, B: []float64{1}, C: []float64{0}, P: 1}
	// Heun is the explicit trapezoid rule: order 2, two evaluations.
	Heun = &Tableau{Label: "heun", A: [][]float64{{}, {1}}, B: []float64{0.5, 0.5}, C: []float64{0, 1}, P: 2}
	// RK4 is the classical Runge–Kutta method: order 4, four evaluations.
	RK4 = &Tableau{Label: "rk4", A: [][]float64{{}, {0.5}, {0, 0.5}, {0, 0, 1}},
		B: []float64{1.0 / 6, 1.0 / 3, 1.0 / 3, 1.0 / 6}, C: []float64{0, 0.5, 0.5, 1}, P: 4}
	// Dopri5 is Dormand–Prince 5(4) (Dormand & Prince 1980; the method of
	// torchdiffeq's and diffrax's default): order 5 with an embedded order-4
	// error estimate, seven stages of which the last is the next step's first.
	Dopri5 = &Tableau{Label: "dopri5",
		A: [][]float64{{},
			{1.0 / 5},
			{3.0 / 40, 9.0 / 40},
			{44.0 / 45, -56.0 / 15, 32.0 / 9},
			{19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
			{9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
			{35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84}},
		B:    []float64{35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84, 0},
		BErr: []float64{5179.0 / 57600, 0, 7571.0 / 16695, 393.0 / 640, -92097.0 / 339200, 187.0 / 2100, 1.0 / 40},
		C:    []float64{0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1}, P: 5, FSAL: true}
)

// ParseMethod returns the method of that name (euler, heun, rk4, ddim,
// dopri5); callers that take only some of them check the one returned.
func ParseMethod(name string) (Method, error) {
	for _, m := range []Method{Euler, Heun, RK4, DDIM, Dopri5} {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("pfode: unknown method %q (euler, heun, rk4, ddim, dopri5)", name)
}

// work holds the stage buffers of a solve.
type work struct {
	k  [][]float64 // stage derivatives
	ys []float64   // stage state
}

func newWork(n, stages int) *work {
	w := &work{k: make([][]float64, stages), ys: make([]float64, n)}
	for i := range w.k {
		w.k[i] = make([]float64, n)
	}
	return w
}

// stages evaluates k_0 … k_{S−1} for a step of h = t1 − t from y. If
// k0Ready, k_0 already holds F(t, y) (first same as last).
func (tb *Tableau) stages(sys System, t, t1 float64, y []float64, w *work, k0Ready bool) (int, error) {
	h := t1 - t
	n := 0
	for s := range tb.B {
		if s == 0 {
			if k0Ready {
				continue
			}
			n++
			if err := sys.Deriv(t, y, w.k[0]); err != nil {
				return n, err
			}
			continue
		}
		copy(w.ys, y)
		for l, a := range tb.A[s] {
			if a != 0 {
				axpy(w.ys, h*a, w.k[l])
			}
		}
		ts := t + tb.C[s]*h
		if tb.C[s] == 1 {
			ts = t1 // exactly the end of the step, never past it
		}
		n++
		if err := sys.Deriv(ts, w.ys, w.k[s]); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (tb *Tableau) step(sys System, t, t1 float64, y []float64, w *work) (int, error) {
	n, err := tb.stages(sys, t, t1, y, w, false)
	if err != nil {
		return n, err
	}
	combine(y, t1-t, tb.B, w.k)
	return n, nil
}

// combine sets y += h Σ_s b_s k_s.
func combine(y []float64, h float64, b []float64, k [][]float64) {
	for s, bs := range b {
		if bs != 0 {
			axpy(y, h*bs, k[s])
		}
	}
}

func axpy(dst []float64, a float64, x []float64) {
	for i, v := range x {
		dst[i] += a * v
	}
}
