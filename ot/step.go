package ot

import "fmt"

// work holds the scratch buffers of one integration.
type work struct {
	k, d   int
	stages []field     // one per Runge–Kutta stage
	xs     []float64   // stage state
	as     []float64   // stage matrix (Jacobian rule)
	ks     [][]float64 // stage matrix derivatives K_j = J_j A_j
	tmp    []float64
}

func newWork(k, d int) *work {
	w := &work{k: k, d: d, xs: make([]float64, k*d), as: make([]float64, k*d*d), tmp: make([]float64, d*d)}
	w.stages = make([]field, 4)
	w.ks = make([][]float64, 4)
	for i := range w.stages {
		w.stages[i] = field{h: make([]float64, k*d), j: make([]float64, k*d*d), fis: make([]float64, k*d*d), ybar: make([]float64, k*d)}
		w.ks[i] = make([]float64, k*d*d)
	}
	return w
}

func identities(k, d int) []float64 {
	a := make([]float64, k*d*d)
	for c := 0; c < k; c++ {
		for i := 0; i < d; i++ {
			a[c*d*d+i*d+i] = 1
		}
	}
	return a
}

// mulAdd sets dst = a·b (d×d, row-major) when add is false, dst += a·b otherwise.
func mulAdd(dst, a, b []float64, d int, add bool) {
	for i := 0; i < d; i++ {
		for l := 0; l < d; l++ {
			s := 0.0
			for m := 0; m < d; m++ {
				s += a[i*d+m] * b[m*d+l]
			}
			if add {
				dst[i*d+l] += s
			} else {
				dst[i*d+l] = s
			}
		}
	}
}

// step advances states x and matrices mats from t to t1 (t1 < t).
func (in *Integration) step(t, t1 float64, x []float64, mats [][]float64, w *work) error {
	n, err := in.Path.At(t)
	if err != nil {
		return err
	}
	k, d := w.k, w.d
	dt := t1 - t
	f0 := &w.stages[0]
	if err := evalField(in.Mixture, n, x, k, d, f0); err != nil {
		return err
	}
	// The paper's and the published rules are explicit in the paper's
	// B = f I − ½ g² F (eq. ot_b) at (x, t), whatever the state solver.
	for r, rule := range in.Rules {
		if rule == Jacobian {
			continue
		}
		a := mats[r]
		b := w.as[:d*d]
		for c := 0; c < k; c++ {
			ac := a[c*d*d : (c+1)*d*d]
			for i, v := range f0.fis[c*d*d : (c+1)*d*d] {
				b[i] = -0.5 * n.G2 * v
			}
			for i := 0; i < d; i++ {
				b[i*d+i] += n.F
			}
			if rule == PublishedRule {
				mulAdd(w.tmp, b, ac, d, false) // B A
			} else {
				transposeMul(w.tmp, ac, b, d) // Aᵀ B
			}
			for i := range ac {
				ac[i] += dt * w.tmp[i]
			}
		}
	}
	if in.Solver == DDIM {
		return in.stepDDIM(n, t1, x, mats, w)
	}
	return in.stepRK(t, t1, x, mats, w)
}

func transposeMul(dst, a, b []float64, d int) {
	for i := 0; i < d; i++ {
		for l := 0; l < d; l++ {
			s := 0.0
			for m := 0; m < d; m++ {
				s += a[m*d+i] * b[m*d+l]
			}
			dst[i*d+l] = s
		}
	}
}

// stepDDIM is x' = (σ'/σ) x + (α' − σ'α/σ) ȳ(x); its Jacobian is
// S = (σ'/σ) I + (α' − σ'α/σ)(I − σ² F)/α.
// It uses ∂ȳ/∂x = (α/σ²) Cov[x_0|x_t] = (I − σ² F)/α (Tweedie).
func (in *Integration) stepDDIM(n Node, t1 float64, x []float64, mats [][]float64, w *work) error {
	n1, err := in.Path.At(t1)
	if err != nil {
		return err
	}
	if !(n1.Alpha > 0) || n1.Sigma < 0 {
		return fmt.Errorf("DDIM target α = %g, σ = %g", n1.Alpha, n1.Sigma)
	}
	k, d := w.k, w.d
	f0 := &w.stages[0]
	c1 := n1.Sigma / n.Sigma
	c2 := n1.Alpha - c1*n.Alpha
	s2 := n.Sigma * n.Sigma
	for r, rule := range in.Rules {
		if rule != Jacobian {
			continue
		}
		a := mats[r]
		s := w.as[:d*d]
		for c := 0; c < k; c++ {
			fc := f0.fis[c*d*d : (c+1)*d*d]
			for i := 0; i < d; i++ {
				for l := 0; l < d; l++ {
					v := -c2 / n.Alpha * s2 * fc[i*d+l]
					if i == l {
						v += c1 + c2/n.Alpha
					}
					s[i*d+l] = v
				}
			}
			ac := a[c*d*d : (c+1)*d*d]
			mulAdd(w.tmp, s, ac, d, false)
			copy(ac, w.tmp)
		}
	}
	for i := range x {
		x[i] = c1*x[i] + c2*f0.ybar[i]
	}
	return nil
}

// stepRK is an explicit Runge–Kutta step; the Jacobian rule runs the same
// stages on the variational equation A' = J A, so the result is the exact
// derivative of the discrete map.
func (in *Integration) stepRK(t, t1 float64, x []float64, mats [][]float64, w *work) error {
	tb := tableaux[in.Solver]
	k, d := w.k, w.d
	dt := t1 - t
	jr := -1
	for r, rule := range in.Rules {
		if rule == Jacobian {
			jr = r
		}
	}
	for s := range tb.b {
		fs := &w.stages[s]
		if s > 0 {
			copy(w.xs, x)
			for l, a := range tb.a[s] {
				if a != 0 {
					axpy(w.xs, dt*a, w.stages[l].h)
				}
			}
			ts := t + tb.c[s]*dt
			if tb.c[s] == 1 {
				ts = t1 // exactly the next node, never past the end
			}
			ns, err := in.Path.At(ts)
			if err != nil {
				return err
			}
			if err := evalField(in.Mixture, ns, w.xs, k, d, fs); err != nil {
				return err
			}
		}
		if jr < 0 {
			continue
		}
		// A_s = A + dt Σ a_sl K_l, K_s = J_s A_s.
		copy(w.as, mats[jr])
		for l, a := range tb.a[s] {
			if a != 0 {
				axpy(w.as, dt*a, w.ks[l])
			}
		}
		for c := 0; c < k; c++ {
			o := c * d * d
			mulAdd(w.ks[s][o:o+d*d], fs.j[o:o+d*d], w.as[o:o+d*d], d, false)
		}
	}
	for s, b := range tb.b {
		axpy(x, dt*b, w.stages[s].h)
		if jr >= 0 {
			axpy(mats[jr], dt*b, w.ks[s])
		}
	}
	return nil
}

func axpy(dst []float64, a float64, x []float64) {
	for i, v := range x {
		dst[i] += a * v
	}
}
