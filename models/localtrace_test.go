package models

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TestPatchExactTraceIsTheVJPTrace: on a float64 skip network with a patch
// residual (6×6 images, 2×2 patches, halo 1; a class-labelled low-rank
// mixture with an idle pixel; every residual weight random; a sub-VP
// schedule, where c_in ≠ 1), the structured exact trace equals the d VJPs
// of access.VJPTrace at small, middle and large t, with 2 mixture
// components a class (4, every one kept) and with 12 (24, where the
// responsibility cut keeps fewer at small t). Dropping any term of the
// formula (S's spread or idle part, the cross term, c_in, the 1/α of B)
// fails it.
func TestPatchExactTraceIsTheVJPTrace(t *testing.T) {
	for _, components := range []int{2, 12} {
		net, sched, x := patchSkipNetwork(t, components)
		vjp, err := access.NewVJPTrace(net, 0)
		if err != nil {
			t.Fatal(err)
		}
		fast, err := PatchExactTrace(net)
		if err != nil || fast == nil {
			t.Fatalf("PatchExactTrace: %v, %v", fast, err)
		}
		for _, tt := range []float64{0.02, 0.3, 0.9} {
			c, _ := schedule.At(sched, tt)
			want, err := vjp.Trace(c, x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fast.Trace(c, x)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-9*math.Abs(want[i]) {
					t.Errorf("%d components a class, t = %g, point %d: structured trace %.12g, VJP trace %.12g",
						components, tt, i, got[i], want[i])
				}
			}
		}
	}
}

// patchSkipNetwork is TestPatchExactTraceIsTheVJPTrace's network, with
// the given mixture components per class, its schedule and two points.
func patchSkipNetwork(t *testing.T, components int) (*access.Net, schedule.Schedule, *mat.Dense) {
	t.Helper()
	return patchSkipNetworkWith(t, components, nil)
}

// patchSkipNetworkWith is patchSkipNetwork with params set over its own.
func patchSkipNetworkWith(t *testing.T, components int, params map[string]any) (*access.Net, schedule.Schedule, *mat.Dense) {
	t.Helper()
	const side = 6
	d := side * side
	rng := rand.New(rand.NewPCG(5, 6))
	data := mat.NewDense(300, d, nil)
	labels := make([]int, 300)
	for i := range 300 {
		labels[i] = i % 2
		for j := range d {
			data.Set(i, j, float64(2*labels[i]-1)*0.4*math.Sin(float64(j+i%3))+0.2*rng.NormFloat64())
		}
		if labels[i] == 0 {
			data.Set(i, 7, 1e-3*rng.Float64()) // an idle pixel in class 0
		}
	}
	g, _, err := mixture.Fit(data, labels, mixture.FitOptions{Components: components, PerClass: true, Rank: 3, Shrink: 0.1, Seed: 1, Idle: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore()
	store.SetParams(map[string]any{ParamNumClasses: 2, ParamWidth: 8, ParamDepth: 1, ParamArch: ArchPatch, ParamPatch: 2,
		ParamPatchHalo: 1, ParamEmbedDim: 4, ParamDType: "float64"})
	store.SetParams(params)
	if err := SetMixtureSkip(store, g); err != nil {
		t.Fatal(err)
	}
	backend := MustNewBackend()
	sched := schedule.DefaultSubVP() // α² + σ² ≠ 1: c_in counts
	net, err := NewAccessNet(backend, store, sched, false)
	if err != nil {
		t.Fatal(err)
	}
	x := mat.NewDense(2, d, nil)
	for i := range 2 {
		for j := range d {
			x.Set(i, j, data.At(i, j)+0.3*rng.NormFloat64())
		}
	}
	c0, _ := schedule.At(sched, 0.3)
	if _, err := net.EpsAt(c0, x); err != nil { // creates the variables
		t.Fatal(err)
	}
	var paths []string
	for v := range store.IterVariables() {
		if v.Trainable && HasScope(v.Scope(), ScoreScope) {
			paths = append(paths, v.Path())
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		w := store.GetVariable(p)
		vals := make([]float64, w.Shape().Size())
		for i := range vals {
			vals[i] = 0.4 * rng.NormFloat64()
		}
		if err := w.SetValue(tensors.FromFlatDataAndDimensions(vals, w.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
	if net, err = NewAccessNet(backend, store, sched, false); err != nil {
		t.Fatal(err)
	}
	return net, sched, x
}

// TestResponsibilityCutIsBounded: on the patch-skip network with 24
// mixture components, leaving out all but the first s components of a
// point's responsibility cut moves each entry of the mixture's Jacobian S
// by at most σ·tail and the trace by at most the cut's bound, for every s
// (at s = 1 both errors are large); the trace PatchExactTrace returns is
// within cutTolerance of the whole mixture's; and at some t the trace
// returned keeps fewer components than the mixture has. A bound without
// a_k a_kᵀ's entries, a cut that gathers other components than those it
// counts, or one that ignores its selection fails it. (Each cut size is a
// graph of its own: 24 here, within model.Exec's cache of 32.)
func TestResponsibilityCutIsBounded(t *testing.T) {
	net, sched, x := patchSkipNetwork(t, 12)
	est, err := PatchExactTrace(net)
	if err != nil || est == nil {
		t.Fatalf("PatchExactTrace: %v, %v", est, err)
	}
	pt := est.(*PatchTrace)
	cutSomewhere, worstAtOne := false, 0.0
	for _, tt := range []float64{0.02, 0.1, 0.3, 0.9} {
		c, _ := schedule.At(sched, tt)
		got, err := pt.Trace(c, x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			p, err := pt.point(c, mat.NewDense(1, x.RawMatrix().Cols, x.RawRowView(i)))
			if err != nil {
				t.Fatal(err)
			}
			kk := len(p.cut.order)
			if kk != 24 {
				t.Fatalf("%d components, want 24", kk)
			}
			full, _, err := pt.traceWith(p, kk)
			if err != nil {
				t.Fatal(err)
			}
			jacFull, err := pt.jacobianWith(p, kk)
			if err != nil {
				t.Fatal(err)
			}
			for s := 1; s < kk; s++ {
				tr, bound, err := pt.traceWith(p, s)
				if err != nil {
					t.Fatal(err)
				}
				if e := math.Abs(tr - full); e > bound+1e-11*math.Abs(full) {
					t.Errorf("t = %g, point %d, %d components: error %.3g above its bound %.3g", tt, i, s, e, bound)
				}
				if s == 1 {
					worstAtOne = max(worstAtOne, math.Abs(tr-full)/math.Abs(full))
				}
				jac, err := pt.jacobianWith(p, s)
				if err != nil {
					t.Fatal(err)
				}
				// The largest change of an entry of S beyond σ·tail, its bound,
				// relative to S's largest entry (for the rounding of a tail of 0).
				excess, scale := 0.0, 0.0
				n, h := pt.d/pt.geom.grid, min(pt.geom.halo, pt.geom.grid-1)
				for j := range pt.d {
					for l := range pt.d {
						if j/n-l/n > h || l/n-j/n > h {
							continue
						}
						excess = max(excess, math.Abs(jac(j, l)-jacFull(j, l))-c.Sigma*p.cut.tail[s])
						scale = max(scale, math.Abs(jacFull(j, l)))
					}
				}
				if excess > 1e-12*scale {
					t.Errorf("t = %g, point %d, %d components: an entry of S moved by %.3g beyond its bound (S's largest entry %.3g)",
						tt, i, s, excess, scale)
				}
			}
			if math.Abs(got[i]-full) > cutTolerance(pt.net.DType)*math.Abs(full) {
				t.Errorf("t = %g, point %d: trace %.12g, whole mixture's %.12g", tt, i, got[i], full)
			}
			_, kept, err := pt.traceAt(c, mat.NewDense(1, x.RawMatrix().Cols, x.RawRowView(i)))
			if err != nil {
				t.Fatal(err)
			}
			if kept < kk {
				cutSomewhere = true
			}
		}
	}
	if !cutSomewhere {
		t.Error("the trace kept every component at every t")
	}
	if worstAtOne < 1e-3 {
		t.Errorf("one component for all: the trace moves by at most %.3g (relative): the cut changes nothing", worstAtOne)
	}
}

// TestPatchExactTraceOnlyForPatchSkipNetworks: a network without a mixture
// skip or with another residual has no structured trace.
func TestPatchExactTraceOnlyForPatchSkipNetworks(t *testing.T) {
	store := NewStore()
	store.SetParams(map[string]any{ParamWidth: 8, ParamDepth: 1, ParamArch: ArchFiLM})
	net, err := NewAccessNet(MustNewBackend(), store, schedule.DefaultVP(), false)
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := PatchExactTrace(net); tr != nil || err != nil {
		t.Errorf("PatchExactTrace of a plain network: %v, %v", tr, err)
	}
}
