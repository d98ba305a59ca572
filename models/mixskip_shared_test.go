package models

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// skipNetwork is the mixture skip alone as dfx/access's model contract
// (null class): ε_mix, and E_mix[‖x₀‖² | x_t] as its T.
func skipNetwork() access.Network {
	return access.Network{
		Eps: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return MixtureEps(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
		},
		T: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
			return MixtureSecondMoment(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
		},
	}
}

// atOneTime is net, failing the test when dfx/access's host calls hand it
// times that SharedTime does not see as one.
func atOneTime(t *testing.T, net access.Network) access.Network {
	check := func(alpha, sigma *graph.Node) {
		if access.SharedTime(alpha) == nil || access.SharedTime(sigma) == nil {
			t.Fatal("a host call's times not recognised as one time")
		}
	}
	eps, tn := net.Eps, net.T
	net.Eps = func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		check(alpha, sigma)
		return eps(scope, x, alpha, sigma)
	}
	net.T = func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		check(alpha, sigma)
		return tn(scope, x, alpha, sigma)
	}
	return net
}

// perRowSkip evaluates the skip with α, σ fed per row [B] (the training
// path, which never assumes one time): ε_mix, its second moment, and the
// VJP Fisher product F v.
func perRowSkip(t *testing.T, backend compute.Backend, store *model.Store, c schedule.Coefficients, x, v *mat.Dense) (eps *mat.Dense, second []float64, fv *mat.Dense) {
	t.Helper()
	b, d := x.Dims()
	al, sg := make([]float64, b), make([]float64, b)
	for i := range al {
		al[i], sg[i] = c.Alpha, c.Sigma
	}
	rows := func(m *mat.Dense) [][]float64 {
		r := make([][]float64, b)
		for i := range r {
			r[i] = m.RawRowView(i)
		}
		return r
	}
	net := skipNetwork()
	outs := model.MustExecOnceN(backend, store, func(sc *model.Scope, xn, vn, an, sn *graph.Node) []*graph.Node {
		if access.SharedTime(an) != nil {
			t.Fatal("per-row times taken for one time")
		}
		return []*graph.Node{net.Eps(sc, xn, an, sn), net.T(sc, xn, an, sn), access.VJPMatVecGraph(net, sc, xn, vn, an, sn)}
	}, rows(x), rows(v), al, sg)
	flat := func(i int) []float64 { return tensors.MustCopyFlatData[float64](outs[i]) }
	return mat.NewDense(b, d, flat(0)), flat(1), mat.NewDense(b, d, flat(2))
}

// TestMixtureSkipAtOneTimeIsExact: through dfx/access's host calls (one
// time per batch, the skip's t-dependent factors computed once per
// component) the skip's ε, x̂₀, second moment, VJP Fisher product and
// exact VJP trace equal the per-row path's and the float64 mixture's
// (mixture.Gaussian.Eval), at small and large t, full and low rank, in
// small and large batches and in one row, with the basis whole and in
// blocks (basisBlocks: here of 3 components and 1).
func TestMixtureSkipAtOneTimeIsExact(t *testing.T) {
	s := schedule.DefaultVP()
	defer func(limit int) { unpackedProductLimit = limit }(unpackedProductLimit)
	for _, rank := range []int{0, 2} {
		for _, blocked := range []bool{true, false} {
			g := skipMixture(t, rank)
			if g.Components() != 4 {
				t.Fatalf("the test mixture has %d components, want 4 (blocks of 3 and 1)", g.Components())
			}
			unpackedProductLimit = 3*g.Dim()*g.Rank(0) + 1
			if !blocked {
				unpackedProductLimit = math.MaxInt
			}
			skipAtOneTimeCases(t, s, g, rank, blocked)
		}
	}
}

// skipAtOneTimeCases is TestMixtureSkipAtOneTimeIsExact on one mixture,
// with its basis in blocks or not.
func skipAtOneTimeCases(t *testing.T, s schedule.Schedule, g *mixture.Gaussian, rank int, blocked bool) {
	t.Helper()
	store := NewStore()
	store.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 2})
	if err := SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	net := access.NewNet(MustNewBackend(), store, s, dtypes.Float64, atOneTime(t, skipNetwork()))
	mv, err := access.NewVJPMatVec(net)
	if err != nil {
		t.Fatal(err)
	}
	vjpTrace, err := access.NewVJPTrace(net, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i, tt := range []float64{1e-3, 0.1, 0.5, 0.99} {
		c, err := schedule.At(s, tt)
		if err != nil {
			t.Fatal(err)
		}
		b := []int{5, swapRows + 1, 1, 1}[i] // every way of backProject (one of them blocked or not)
		x, v := mat.NewDense(b, g.Dim(), nil), mat.NewDense(b, g.Dim(), nil)
		for i := range b {
			for j := 0; j < g.Dim(); j++ {
				x.Set(i, j, c.Alpha*(float64(i%2)-0.5+0.3*rng.NormFloat64())+c.Sigma*rng.NormFloat64())
				v.Set(i, j, rng.NormFloat64())
			}
		}
		exact, err := g.Eval(mixture.Query{At: c, X: x, V: v, Want: mixture.Score | mixture.Denoiser | mixture.SecondMoment | mixture.Trace | mixture.MatVec})
		if err != nil {
			t.Fatal(err)
		}
		eps, err := net.EpsAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		den, err := net.DenoiserAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		second, err := net.TAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		fv, err := mv.Apply(score.State{At: c, X: x}, v)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := vjpTrace.Trace(c, x)
		if err != nil {
			t.Fatal(err)
		}
		rowEps, rowSecond, rowFv := perRowSkip(t, net.Backend, store, c, x, v)
		exactEps := mat.NewDense(b, g.Dim(), nil)
		exactEps.Scale(-c.Sigma, exact.Score)
		for _, cmp := range []struct {
			what      string
			got, want []float64
		}{
			{"ε against the per-row path", eps.RawMatrix().Data, rowEps.RawMatrix().Data},
			{"ε against the mixture", eps.RawMatrix().Data, exactEps.RawMatrix().Data},
			{"x̂₀ against the mixture", den.RawMatrix().Data, exact.Denoiser.RawMatrix().Data},
			{"E‖x₀‖² against the per-row path", second, rowSecond},
			{"E‖x₀‖² against the mixture", second, exact.SecondMoment},
			{"F v against the per-row path", fv.RawMatrix().Data, rowFv.RawMatrix().Data},
			{"F v against the mixture", fv.RawMatrix().Data, exact.MatVec.RawMatrix().Data},
			{"VJP trace against the mixture", tr, exact.Trace},
		} {
			if e := relErr(cmp.got, cmp.want); e > 1e-9 {
				t.Errorf("rank %d, blocks %v, t = %g: %s off by %.3g (relative)", rank, blocked, tt, cmp.what, e)
			}
		}
		if n, want := basisBlockCount(store), map[bool]int{true: 2, false: 0}[blocked]; n != want {
			t.Errorf("rank %d, %d rows: %d basis blocks in the store, want %d", rank, b, n, want)
		}
	}
}

// basisBlockCount counts the basis blocks among the store's inference
// copies (basisBlocks).
func basisBlockCount(store *model.Store) int {
	n := 0
	for v := range store.IterVariables() {
		if IsInferenceCopy(v) && strings.Contains(v.Path(), "mixture_basis_t") {
			n++
		}
	}
	return n
}

// relErr is ‖got − want‖∞ / max(1, ‖want‖∞).
func relErr(got, want []float64) float64 {
	worst, scale := 0.0, 1.0
	for i := range want {
		worst = math.Max(worst, math.Abs(got[i]-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	return worst / scale
}
