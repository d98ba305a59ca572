package adjoint

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
)

// gmmVJPSeeds is the number of seeds (the first ones) at which the VJP
// operator's d×d matrix is built: d VJP products per state, and the Go
// backend's scalar exp in SiLU makes them the study's main cost.
const gmmVJPSeeds = 16

// scoreState computes, at one state of the exact guided path, every
// method's λ against a separately computed exact λ*, the operators'
// Hilbert–Schmidt errors against the exact Fisher and the network's ε error.
func scoreState(mix mixture.Mixture, net *access.Net, guides map[string]dfxadjoint.Guide, st pathState, inner int) (*GMMStep, error) {
	b, d := st.X.Dims()
	row := &GMMStep{Step: st.Step, T: st.At.T, Sigma: st.At.Sigma,
		Cos: map[string]MeanSE{}, RelErr: map[string]MeanSE{}, HS: map[string]MeanSE{}}
	ref, err := guides[GMMExact].Gradient(st.X, st.At.T, inner)
	if err != nil {
		return nil, err
	}
	grads := map[string]*dfxadjoint.GradientResult{}
	for _, m := range GMMMethods {
		g, ok := guides[m]
		if !ok {
			continue
		}
		gr, err := g.Gradient(st.X, st.At.T, inner)
		if err != nil {
			return nil, fmt.Errorf("adjoint: gmm %s at t = %g: %w", m, st.At.T, err)
		}
		grads[m] = gr
		cs, rs := make([]float64, b), make([]float64, b)
		for i := range b {
			cs[i] = cosine(gr.Grad.RawRowView(i), ref.Grad.RawRowView(i))
			rs[i] = stats.RelNorm(gr.Grad.RawRowView(i), ref.Grad.RawRowView(i))
		}
		row.Cos[m], row.RelErr[m] = stats.EstimateOf(cs), stats.EstimateOf(rs)
	}
	gn := make([]float64, b)
	for i := range b {
		gn[i] = floats.Norm(ref.Grad.RawRowView(i), 2)
	}
	row.GradNormExact = stats.EstimateOf(gn)

	ex, err := mix.Eval(mixture.Query{At: st.At, X: st.X, Want: mixture.Full | mixture.Score})
	if err != nil {
		return nil, err
	}
	fn := make([]float64, b)
	for i := range b {
		fn[i] = hsNorm(ex.Fisher[i])
	}
	row.FisherHS = stats.EstimateOf(fn)
	for _, m := range []string{GMMEANet, GMMEAExact} {
		gr, ok := grads[m]
		if !ok {
			continue
		}
		ybar, x0 := gr.Trajectory.Denoisers[0], gr.Trajectory.Endpoint()
		hs := make([]float64, b)
		for i := range b {
			hs[i] = hsErrorEA(ex.Fisher[i], x0.RawRowView(i), ybar.RawRowView(i), st.At)
		}
		row.HS[m] = stats.EstimateOf(hs)
	}
	if g, ok := guides[GMMVJP]; ok {
		nb := min(b, gmmVJPSeeds)
		cols, err := access.OperatorMatrix(g.Operator, score.State{At: st.At, X: st.X.Slice(0, nb, 0, d).(*mat.Dense)})
		if err != nil {
			return nil, err
		}
		hs := make([]float64, nb)
		for i := range nb {
			hs[i] = hsErrorDense(ex.Fisher[i], cols[i])
		}
		row.HS[GMMVJP] = stats.EstimateOf(hs)
	}
	if net != nil {
		eps, err := net.EpsAt(st.At, st.X)
		if err != nil {
			return nil, err
		}
		var want mat.Dense
		score.EpsFromScore(&want, st.At, ex.Score) // the exact ε = −σ ∇log q
		er := make([]float64, b)
		for i := range b {
			er[i] = stats.RelNorm(eps.RawRowView(i), want.RawRowView(i))
		}
		row.NetEpsRelErr = stats.EstimateOf(er)
	}
	return row, nil
}

// hsNorm is ‖F‖_HS.
func hsNorm(f *mat.SymDense) float64 {
	d := f.SymmetricDim()
	var s float64
	for i := range d {
		for j := range d {
			s += f.At(i, j) * f.At(i, j)
		}
	}
	return math.Sqrt(s)
}

// hsErrorEA is ‖F − F_EA‖_HS with F_EA = access.DFEAMatrix, the matrix
// that DF-EA (eq. EA_approx) applies (symmetric, so its rows are its
// columns).
func hsErrorEA(f *mat.SymDense, x0, ybar []float64, c schedule.Coefficients) float64 {
	return hsErrorDense(f, access.DFEAMatrix(c, x0, ybar))
}

// hsErrorDense is ‖F − A‖_HS for A given by its columns.
func hsErrorDense(f *mat.SymDense, cols *mat.Dense) float64 {
	d := f.SymmetricDim()
	var s float64
	for j := range d {
		for i := range d {
			e := f.At(i, j) - cols.At(j, i)
			s += e * e
		}
	}
	return math.Sqrt(s)
}
