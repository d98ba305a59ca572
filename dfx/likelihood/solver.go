package likelihood

import (
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// stepper advances the joint state (x, ∫) by one step of a fixed-step
// scheme; its buffers are reused across steps.
type stepper struct {
	solver Solver
	k      [4]*mat.Dense // velocity stages [B, d]
	l      [4][]float64  // log-density rate stages [B]
	tmp    *mat.Dense    // stage point
}

func newStepper(s Solver, b, d int) *stepper {
	st := &stepper{solver: s, tmp: mat.NewDense(b, d, nil)}
	for i := range st.k {
		st.k[i] = mat.NewDense(b, d, nil)
		st.l[i] = make([]float64, b)
	}
	return st
}

// stagePoint sets tmp = x + h·k.
func (st *stepper) stagePoint(x *mat.Dense, h float64, k *mat.Dense) *mat.Dense {
	tx, xr, kr := st.tmp.RawMatrix().Data, x.RawMatrix().Data, k.RawMatrix().Data
	for i := range tx {
		tx[i] = xr[i] + h*kr[i]
	}
	return st.tmp
}

// step moves x from t to t+h in place and adds the log-density increment to
// integral; it returns the number of Dynamics evaluations.
func (st *stepper) step(dyn Dynamics, s schedule.Schedule, x *mat.Dense, integral []float64, t, tNext float64) (int, error) {
	h := tNext - t
	var weights []float64
	var n int
	switch st.solver {
	case Euler:
		if err := rhs(dyn, s, x, t, st.k[0], st.l[0]); err != nil {
			return 1, err
		}
		weights, n = []float64{1}, 1
	case Heun:
		if err := rhs(dyn, s, x, t, st.k[0], st.l[0]); err != nil {
			return 1, err
		}
		if err := rhs(dyn, s, st.stagePoint(x, h, st.k[0]), tNext, st.k[1], st.l[1]); err != nil {
			return 2, err
		}
		weights, n = []float64{0.5, 0.5}, 2
	case RK4:
		mid := t + h/2
		if err := rhs(dyn, s, x, t, st.k[0], st.l[0]); err != nil {
			return 1, err
		}
		if err := rhs(dyn, s, st.stagePoint(x, h/2, st.k[0]), mid, st.k[1], st.l[1]); err != nil {
			return 2, err
		}
		if err := rhs(dyn, s, st.stagePoint(x, h/2, st.k[1]), mid, st.k[2], st.l[2]); err != nil {
			return 3, err
		}
		if err := rhs(dyn, s, st.stagePoint(x, h, st.k[2]), tNext, st.k[3], st.l[3]); err != nil {
			return 4, err
		}
		weights, n = []float64{1.0 / 6, 2.0 / 6, 2.0 / 6, 1.0 / 6}, 4
	}
	xr := x.RawMatrix().Data
	for s, w := range weights {
		kr := st.k[s].RawMatrix().Data
		for i := range xr {
			xr[i] += h * w * kr[i]
		}
		for i := range integral {
			integral[i] += h * w * st.l[s][i]
		}
	}
	return n, nil
}
