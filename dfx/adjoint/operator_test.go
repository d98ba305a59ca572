package adjoint

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// testBackend is GoMLX's Go backend with ops run one at a time (the
// parallel scheduler can deadlock on 2 cores).
var testBackend = sync.OnceValue(func() compute.Backend {
	b, err := compute.NewWithConfig("go:ops_sequential")
	if err != nil {
		panic(err)
	}
	return b
})

func randDense(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range r {
		for j := range c {
			m.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return m
}

// relRow is ‖a − b‖/‖b‖.
func relRow(a, b []float64) float64 {
	diff := make([]float64, len(a))
	floats.SubTo(diff, a, b)
	return floats.Norm(diff, 2) / floats.Norm(b, 2)
}

// TestDFEAApplyIsEAApprox checks DFEA.Apply against eq. EA_approx written
// as a matrix, (I/σ² − (α²/σ⁴)(x̂₀x̂₀ᵀ − ȳȳᵀ)) v, to 1e-12 relative, and
// that it reads ȳ from State.Denoiser and x̂₀ from State.Endpoint (not X).
func TestDFEAApplyIsEAApprox(t *testing.T) {
	const b, d = 4, 5
	rng := rand.New(rand.NewPCG(2, 9))
	c, err := schedule.At(schedule.DefaultVP(), 0.4)
	if err != nil {
		t.Fatal(err)
	}
	st := score.State{At: c, X: randDense(rng, b, d, 9), Denoiser: randDense(rng, b, d, 1), Endpoint: randDense(rng, b, d, 1)}
	v := randDense(rng, b, d, 1)
	got, err := access.DFEA{}.Apply(st, v)
	if err != nil {
		t.Fatal(err)
	}
	s2 := c.Sigma * c.Sigma
	k := c.Alpha * c.Alpha / (s2 * s2)
	for i := range b {
		y := mat.NewVecDense(d, mat.Row(nil, i, st.Denoiser))
		x0 := mat.NewVecDense(d, mat.Row(nil, i, st.Endpoint))
		var yy, xx, f mat.Dense
		yy.Outer(1, y, y)
		xx.Outer(1, x0, x0)
		f.Sub(&xx, &yy)
		f.Scale(-k, &f)
		for j := range d {
			f.Set(j, j, f.At(j, j)+1/s2)
		}
		var want mat.VecDense
		want.MulVec(&f, mat.NewVecDense(d, mat.Row(nil, i, v)))
		if e := relRow(got.RawRowView(i), want.RawVector().Data); e > 1e-12 {
			t.Errorf("row %d: DF-EA %v, eq. EA_approx %v (relative error %.2e)", i, got.RawRowView(i), want.RawVector().Data, e)
		}
	}
}

// spy is an operator that records the states it is given.
type spy struct {
	inner  score.FisherOperator
	states []score.State
}

func (s *spy) Name() string { return "spy" }
func (s *spy) Apply(st score.State, v *mat.Dense) (*mat.Dense, error) {
	s.states = append(s.states, st)
	return s.inner.Apply(st, v)
}

// TestBackpropHandsTheOperatorTheCachedStates checks that the adjoint pass
// visits the inner states from the last step back to the first, with the
// model's denoiser (x − σ ε̂)/α at each and the solve's endpoint.
func TestBackpropHandsTheOperatorTheCachedStates(t *testing.T) {
	m, means := gmm(t, 4, 2, 3)
	s := schedule.DefaultVP()
	sp := &spy{inner: access.DFEA{}}
	g := Guide{Schedule: s, Model: score.Exact{Mixture: m}, Operator: sp, Loss: SquaredDistance([]float64{1, 0, 0, 0})}
	x := noisy(s, means, 3, 0.5, 1)
	gr, err := g.Gradient(x, 0.5, 3)
	if err != nil {
		t.Fatal(err)
	}
	tr := gr.Trajectory
	if len(sp.states) != 3 {
		t.Fatalf("%d operator calls for 3 inner steps", len(sp.states))
	}
	for k, st := range sp.states {
		i := 2 - k
		if st.At != tr.At[i] || !mat.Equal(st.X, tr.States[i]) || st.Endpoint != tr.Endpoint() {
			t.Errorf("call %d: not inner state %d or not the endpoint", k, i)
		}
		r, err := m.Eval(mixture.Query{At: st.At, X: st.X, Want: mixture.Denoiser})
		if err != nil {
			t.Fatal(err)
		}
		if !mat.EqualApprox(st.Denoiser, r.Denoiser, 1e-12) {
			t.Errorf("call %d: denoiser %v, mixture's %v", k, mat.Formatted(st.Denoiser), mat.Formatted(r.Denoiser))
		}
	}
}

// TestVJPThroughExactDiracNetMatchesExactOperator checks the VJP operator
// through access.NewMixture (the Dirac mixture as a float64 GoMLX graph)
// against the Exact operator of the same mixture (dfx/mixture), product by
// product, and the adjoint gradients they give, to 1e-6 relative.
func TestVJPThroughExactDiracNetMatchesExactOperator(t *testing.T) {
	const n, d, b = 7, 5, 4
	rng := rand.New(rand.NewPCG(4, 4))
	y := randDense(rng, n, d, 1)
	s := schedule.DefaultVP()
	ref, err := mixture.NewDirac(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := access.NewMixture(testBackend(), s, dtypes.Float64, y)
	if err != nil {
		t.Fatal(err)
	}
	vjp, err := access.NewVJPMatVec(gm.Net())
	if err != nil {
		t.Fatal(err)
	}
	loss := lseLoss([]float64{0.3, 0, -0.2, 0.1, 0})
	exact := Guide{Schedule: s, Model: score.Exact{Mixture: ref}, Operator: score.Exact{Mixture: ref}, Loss: loss}
	viaNet := Guide{Schedule: s, Model: access.NetModel{Net: gm.Net()}, Operator: vjp, Loss: loss}
	for _, tm := range []float64{0.2, 0.6} {
		x := noisy(s, y, b, tm, 8)
		c, _ := schedule.At(s, tm)
		v := randDense(rng, b, d, 1)
		fe, err := score.Exact{Mixture: ref}.Apply(score.State{At: c, X: x}, v)
		if err != nil {
			t.Fatal(err)
		}
		fv, err := vjp.Apply(score.State{At: c, X: x}, v)
		if err != nil {
			t.Fatal(err)
		}
		for i := range b {
			if e := relRow(fv.RawRowView(i), fe.RawRowView(i)); e > 1e-6 {
				t.Errorf("t=%g row %d: VJP F v %v, exact %v (relative error %.2e)", tm, i, fv.RawRowView(i), fe.RawRowView(i), e)
			}
		}
		ge, err := exact.Gradient(x, tm, 4)
		if err != nil {
			t.Fatal(err)
		}
		gv, err := viaNet.Gradient(x, tm, 4)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range b {
			e := relRow(gv.Grad.RawRowView(i), ge.Grad.RawRowView(i))
			worst = math.Max(worst, e)
			if e > 1e-6 {
				t.Errorf("t=%g row %d: VJP adjoint %v, exact %v (relative error %.2e)", tm, i, gv.Grad.RawRowView(i), ge.Grad.RawRowView(i), e)
			}
		}
		t.Logf("t=%g: worst relative gradient error %.2e", tm, worst)
	}
}
