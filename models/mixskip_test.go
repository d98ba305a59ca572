package models

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// skipMixture fits a labelled mixture (2 classes, 2 components each) of
// the given rank to random data in d = 6, where one coordinate is idle in
// class 0 (modelled apart when the rank is low).
func skipMixture(t *testing.T, rank int) *mixture.Gaussian {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	n, d := 400, 6
	x := mat.NewDense(n, d, nil)
	labels := make([]int, n)
	for i := 0; i < n; i++ {
		labels[i] = i % 2
		c := float64(2*labels[i] - 1)
		for j := 0; j < d; j++ {
			x.Set(i, j, c*0.6*float64(j%3)+rng.NormFloat64()*(0.1+0.05*float64(j)))
		}
		if i%4 < 2 {
			x.Set(i, 0, x.At(i, 0)+1)
		}
		if labels[i] == 0 { // an idle coordinate in class 0
			x.Set(i, 5, 1e-3*rng.Float64())
		}
	}
	g, _, err := mixture.Fit(x, labels, mixture.FitOptions{Components: 2, PerClass: true, Rank: rank, Shrink: 0.1, Seed: 1, Idle: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestMixtureSkipMatchesTheExactScore: the graph's ε_mix (float64 store)
// equals −σ ∇log q_t of the host mixture, class-conditional (Restrict) and
// unconditional (null class), full and low rank, at small and large t.
func TestMixtureSkipMatchesTheExactScore(t *testing.T) {
	s := schedule.DefaultVP()
	for _, rank := range []int{0, 2} {
		g := skipMixture(t, rank)
		store := NewStore()
		store.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 2, ParamWidth: 8, ParamDepth: 1})
		if err := SetMixtureSkip(store, g); err != nil {
			t.Fatal(err)
		}
		backend := MustNewBackend()
		rng := rand.New(rand.NewPCG(5, 6))
		for _, tt := range []float64{1e-3, 0.1, 0.5, 0.99} {
			co, err := schedule.At(s, tt)
			if err != nil {
				t.Fatal(err)
			}
			const b = 5
			x := mat.NewDense(b, g.Dim(), nil)
			for i := range b {
				for j := 0; j < g.Dim(); j++ {
					x.Set(i, j, co.Alpha*(float64(i%2)-0.5+0.3*rng.NormFloat64())+co.Sigma*rng.NormFloat64())
				}
			}
			rows := make([][]float64, b)
			for i := range rows {
				rows[i] = x.RawRowView(i)
			}
			al, sg := make([]float64, b), make([]float64, b)
			for i := range al {
				al[i], sg[i] = co.Alpha, co.Sigma
			}
			for _, class := range []int32{0, 1, 2} { // 2: the null class
				cls := []int32{class, class, class, class, class}
				out := model.MustExecOnce(backend, store, func(sc *model.Scope, xn, an, sn, cn *graph.Node) *graph.Node {
					return MixtureEps(sc, Inputs{X: xn, Alpha: an, Sigma: sn, Class: cn})
				}, rows, al, sg, cls)
				got := tensors.MustCopyFlatData[float64](out)
				ref := g
				if class < 2 {
					if ref, err = g.Restrict(int(class)); err != nil {
						t.Fatal(err)
					}
				}
				res, err := ref.Eval(mixture.Query{At: co, X: x, Want: mixture.Score})
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for i := range b {
					for j := 0; j < g.Dim(); j++ {
						want := -co.Sigma * res.Score.At(i, j)
						worst = math.Max(worst, math.Abs(got[i*g.Dim()+j]-want)/(1+math.Abs(want)))
					}
				}
				if worst > 1e-9 {
					t.Errorf("rank %d, t = %g, class %d: ε_mix off the exact −σ∇log q_t by %.3g (relative)", rank, tt, class, worst)
				}
			}
		}
	}
}

// TestUntrainedSkipNetworkIsTheMixture: the residual's output layer starts
// at zero, so Eps of a fresh network with a skip is ε_mix exactly.
func TestUntrainedSkipNetworkIsTheMixture(t *testing.T) {
	g := skipMixture(t, 2)
	for _, arch := range []string{ArchMLP, ArchFiLM} {
		store := NewStore()
		store.SetParams(map[string]any{ParamNumClasses: 2, ParamWidth: 16, ParamDepth: 2, ParamArch: arch})
		if err := SetMixtureSkip(store, g); err != nil {
			t.Fatal(err)
		}
		x := [][]float32{{0.1, 0.2, -0.3, 0.4, 0.5, -0.6}, {1, 0, 0, 0, 0, 0}}
		outs := model.MustExecOnceN(MustNewBackend(), store, func(sc *model.Scope, xn, an, sn, cn *graph.Node) []*graph.Node {
			in := Inputs{X: xn, Alpha: an, Sigma: sn, Class: cn}
			return []*graph.Node{Eps(sc, in), MixtureEps(sc, in)}
		}, x, []float32{0.9, 0.5}, []float32{0.3, 0.8}, []int32{0, 2})
		a, b := tensors.MustCopyFlatData[float32](outs[0]), tensors.MustCopyFlatData[float32](outs[1])
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s: Eps[%d] = %g, ε_mix = %g: an untrained skip network must be the mixture", arch, i, a[i], b[i])
			}
		}
	}
}

// TestMixtureSkipOfRoundTrips: the mixture rebuilt from a store (float64
// and float32) gives the fitted mixture's log q and score, per class too.
func TestMixtureSkipOfRoundTrips(t *testing.T) {
	g := skipMixture(t, 2)
	co, err := schedule.At(schedule.DefaultVP(), 0.05)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(3, g.Dim(), []float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 1, 0, 0, 0, 0, 0, -0.5, 0.5, 0.2, 0.1, 0, 0.3})
	for _, dt := range []string{"float64", "float32"} {
		store := NewStore()
		store.SetParams(map[string]any{ParamDType: dt, ParamNumClasses: 2})
		if err := SetMixtureSkip(store, g); err != nil {
			t.Fatal(err)
		}
		back, err := MixtureSkipOf(store)
		if err != nil {
			t.Fatal(err)
		}
		tol := map[string]float64{"float64": 1e-10, "float32": 1e-4}[dt]
		for _, c := range []int{-1, 0, 1} {
			a, b := g, back
			if c >= 0 {
				a, _ = g.Restrict(c)
				b, _ = back.Restrict(c)
			}
			ra, err := a.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb | mixture.Score})
			if err != nil {
				t.Fatal(err)
			}
			rb, err := b.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb | mixture.Score})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if e := math.Abs(ra.LogProb[i]-rb.LogProb[i]) / (1 + math.Abs(ra.LogProb[i])); e > tol {
					t.Errorf("%s, class %d: log q %g rebuilt as %g", dt, c, ra.LogProb[i], rb.LogProb[i])
				}
				for j := 0; j < g.Dim(); j++ {
					if e := math.Abs(ra.Score.At(i, j)-rb.Score.At(i, j)) * co.Sigma / (1 + co.Sigma*math.Abs(ra.Score.At(i, j))); e > tol {
						t.Errorf("%s, class %d: score %g rebuilt as %g", dt, c, ra.Score.At(i, j), rb.Score.At(i, j))
					}
				}
			}
		}
	}
}

// TestCopyTrainableCarriesTheSkipAndTheScopedParameters: a skip ε-network
// with its own (scoped) hyperparameters, copied into a store whose root
// parameters differ (as ν_θ's training store does), computes the same ε.
func TestCopyTrainableCarriesTheSkipAndTheScopedParameters(t *testing.T) {
	g := skipMixture(t, 2)
	src := NewStore()
	src.SetParams(map[string]any{ParamNumClasses: 2, ParamParam: "edm",
		"/score/" + ParamParam: "eps", "/score/" + ParamArch: ArchFiLM, "/score/" + ParamWidth: 24, "/score/" + ParamDepth: 1})
	if err := SetMixtureSkip(src, g); err != nil {
		t.Fatal(err)
	}
	dst := NewStore()
	dst.SetParams(map[string]any{ParamNumClasses: 2, ParamParam: "edm", ParamWidth: 8})
	backend := MustNewBackend()
	x := [][]float32{{0.1, 0.2, -0.3, 0.4, 0.5, -0.6}}
	eps := func(st *model.Store) []float32 {
		out := model.MustExecOnce(backend, st, func(sc *model.Scope, xn, an, sn, cn *graph.Node) *graph.Node {
			return Eps(sc, Inputs{X: xn, Alpha: an, Sigma: sn, Class: cn})
		}, x, []float32{0.9}, []float32{0.3}, []int32{1})
		return tensors.MustCopyFlatData[float32](out)
	}
	want := eps(src) // creates the network's variables in src
	for v := range src.IterVariables() {
		if HasScope(v.Scope(), ScoreScope) && v.Name() == "biases" && v.Scope() == "/score/output" {
			val, _ := v.Value() // a non-zero output layer, so that the trunk counts
			f := tensors.MustCopyFlatData[float32](val)
			for i := range f {
				f[i] = 0.1 * float32(i+1)
			}
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(f, val.Shape().Dimensions...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	want = eps(src)
	if err := CopyTrainable(dst, src); err != nil {
		t.Fatal(err)
	}
	got := eps(dst)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ε after CopyTrainable %v, before %v", got, want)
		}
	}
}

// TestMixtureSecondMomentIsTheMixtures: the graph's E_mix[‖x₀‖² | x_t]
// equals mixture.Gaussian's SecondMoment (float64), unconditionally and per
// class, at several t, for components with a rank-r part, a rest and idle
// coordinates.
func TestMixtureSecondMomentIsTheMixtures(t *testing.T) {
	g := skipMixture(t, 2)
	store := NewStore()
	store.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 2})
	if err := SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	xs := []float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 1, 0, 0, 0, 0, 0, -0.5, 0.5, 0.2, 0.1, 0, 0.3}
	backend := MustNewBackend()
	for _, tt := range []float64{0.01, 0.2, 0.9} {
		co, _ := schedule.At(schedule.DefaultVP(), tt)
		for _, c := range []int{-1, 0, 1} {
			want := g
			cls := int32(2)
			if c >= 0 {
				want, _ = g.Restrict(c)
				cls = int32(c)
			}
			ref, err := want.Eval(mixture.Query{At: co, X: mat.NewDense(3, 6, xs), Want: mixture.SecondMoment})
			if err != nil {
				t.Fatal(err)
			}
			rows := [][]float64{xs[0:6], xs[6:12], xs[12:18]}
			out := model.MustExecOnce(backend, store, func(sc *model.Scope, xn, an, sn, cn *graph.Node) *graph.Node {
				return MixtureSecondMoment(sc, Inputs{X: xn, Alpha: an, Sigma: sn, Class: cn})
			}, rows, []float64{co.Alpha, co.Alpha, co.Alpha}, []float64{co.Sigma, co.Sigma, co.Sigma}, []int32{cls, cls, cls})
			got := tensors.MustCopyFlatData[float64](out)
			for i := range 3 {
				if math.Abs(got[i]-ref.SecondMoment[i]) > 1e-9*(1+math.Abs(ref.SecondMoment[i])) {
					t.Errorf("t = %g, class %d, row %d: graph E‖x₀‖² %.12g, mixture %.12g", tt, c, i, got[i], ref.SecondMoment[i])
				}
			}
		}
	}
}

// TestTraceSkipNetworksStartExact: untrained trace networks with the trace
// skip give the skip mixture's exact Fisher trace through DF-TM (eq.
// trace_appro, with the mixture's own denoiser) and through centred DF-TM
// (tr F = (d/σ²)(1 − ν)).
func TestTraceSkipNetworksStartExact(t *testing.T) {
	g := skipMixture(t, 2)
	store := NewStore()
	store.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 2, ParamWidth: 8, ParamDepth: 1, ParamTraceSkip: true})
	if err := SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	xs := []float64{0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 1, 0, 0, 0, 0, 0, -0.5, 0.5, 0.2, 0.1, 0, 0.3}
	rows := [][]float64{xs[0:6], xs[6:12], xs[12:18]}
	backend := MustNewBackend()
	for _, tt := range []float64{0.05, 0.5} {
		co, _ := schedule.At(schedule.DefaultVP(), tt)
		ref, err := g.Eval(mixture.Query{At: co, X: mat.NewDense(3, 6, xs), Want: mixture.Trace})
		if err != nil {
			t.Fatal(err)
		}
		outs := model.MustExecOnceN(backend, store, func(sc *model.Scope, xn, an, sn, cn *graph.Node) []*graph.Node {
			in := Inputs{X: xn, Alpha: an, Sigma: sn, Class: cn}
			y := access.DenoiserFromEpsGraph(xn, Eps(sc, in), an, sn)
			return []*graph.Node{TraceNet(sc, in), CentredTraceNet(sc, in), graph.ReduceSum(graph.Square(y), -1)}
		}, rows, []float64{co.Alpha, co.Alpha, co.Alpha}, []float64{co.Sigma, co.Sigma, co.Sigma}, []int32{2, 2, 2})
		tv, nu, y2 := tensors.MustCopyFlatData[float64](outs[0]), tensors.MustCopyFlatData[float64](outs[1]), tensors.MustCopyFlatData[float64](outs[2])
		d, a, s := 6.0, co.Alpha, co.Sigma
		for i := range 3 {
			dftm := d/(s*s) - a*a/(s*s*s*s)*(d*tv[i]-y2[i])
			centred := d / (s * s) * (1 - nu[i])
			for name, got := range map[string]float64{"DF-TM": dftm, "centred DF-TM": centred} {
				if math.Abs(got-ref.Trace[i]) > 1e-7*math.Abs(ref.Trace[i]) {
					t.Errorf("t = %g, row %d: %s with the trace skip %.10g, exact tr F %.10g", tt, i, name, got, ref.Trace[i])
				}
			}
		}
	}
}

// TestTraceSkipWithoutItsMixtureIsRefused: a trace network with the trace
// skip, loaded without the ε-network whose mixture it borrows (its own
// checkpoint does not hold it), is refused by NewAccessNet and the trainer's
// checks instead of running on a freshly made mixture.
func TestTraceSkipWithoutItsMixtureIsRefused(t *testing.T) {
	g := skipMixture(t, 2)
	full := NewStore()
	full.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 2, ParamWidth: 8, ParamDepth: 1, "/" + TraceScope + "/" + ParamTraceSkip: true})
	if err := SetMixtureSkip(full, g); err != nil {
		t.Fatal(err)
	}
	if err := CheckMixtureSkip(full); err != nil {
		t.Fatalf("with its mixture: %v", err)
	}
	alone := NewStore()
	alone.SetParams(map[string]any{ParamDType: "float64", ParamNumClasses: 2, ParamWidth: 8, ParamDepth: 1, "/" + TraceScope + "/" + ParamTraceSkip: true})
	alone.RootScope().At(TraceScope).VariableWithValue("w", tensors.FromValue([]float64{1}))
	if err := CheckMixtureSkip(alone); err == nil || !strings.Contains(err.Error(), "trace_skip") {
		t.Errorf("t_θ with the trace skip and no mixture: %v", err)
	}
	if _, err := NewAccessNet(MustNewBackend(), alone, schedule.DefaultVP(), true); err == nil {
		t.Error("NewAccessNet accepted t_θ without its mixture")
	}
}
