package mnist

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/draw"
	"github.com/dfx-lab/dfx/models"
)

// BenchmarkSkipMixtureTrace times the committed ε-network's skip mixture
// (400 components of rank 32, d = 784) on what a likelihood solve asks of
// it: score and exact Fisher trace of a batch of 50 test images at several
// times (the host side of dfx nll --trace skip-hutchinson:K).
func BenchmarkSkipMixtureTrace(b *testing.B) {
	store, _, err := LoadNetwork("", "eps")
	if err != nil {
		b.Fatal(err)
	}
	g, err := models.MixtureSkipOf(store)
	if err != nil {
		b.Fatal(err)
	}
	x0, err := TestImages(50)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range []float64{0.001, 0.05, 0.3, 0.9} {
		b.Run(fmt.Sprintf("t=%g", t), func(b *testing.B) {
			c, _ := schedule.At(Schedule(), t)
			x, _ := draw.Queries(c, x0, rand.New(rand.NewPCG(1, 1)))
			q := mixture.Query{At: c, X: x, Want: mixture.Score | mixture.Trace}
			for b.Loop() {
				if _, err := g.Eval(q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLikelihoodEval times one evaluation of what mnist-model's
// likelihood solve integrates, on 50 test images at t = 0.05 and 0.3: the
// committed ε-network's score and its trace, the skip's exact trace plus
// Hutchinson-4 on the residual, with the probes' VJPs through the skip in
// the graph (access.ControlVariate, models.SkipControlVariate), with the
// skip's part in closed form and the residual's VJPs by graph.Gradient
// (models.NewSkipHutchinsonByGradient), and with the patch network's VJPs
// written out as well (models.NewSkipHutchinson, what the study runs), the
// three alternating in one loop (an op is one of each): through-ms,
// closed-gradient-ms and closed-ms are each one's mean wall time a call.
func BenchmarkLikelihoodEval(b *testing.B) {
	store, net := committedEps(b)
	through, _, err := models.SkipControlVariate(net.Backend, store, Schedule(), net.DType, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	closed, err := models.NewSkipHutchinson(net, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	byGradient, err := models.NewSkipHutchinsonByGradient(net, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	x0, err := TestImages(50)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range []float64{0.05, 0.3} {
		c, _ := schedule.At(Schedule(), t)
		x, _ := draw.Queries(c, x0, rand.New(rand.NewPCG(1, 1)))
		b.Run(fmt.Sprintf("t=%g", t), func(b *testing.B) {
			ests := []score.TraceEstimator{through, byGradient, closed}
			for _, est := range ests { // compiled before the clock
				if _, err := (access.NetModel{Net: net, Trace: est}).Eval(c, x, score.WantScore|score.WantTrace); err != nil {
					b.Fatal(err)
				}
			}
			var spent [3]time.Duration
			for b.Loop() {
				for i, est := range ests {
					start := time.Now()
					if _, err := (access.NetModel{Net: net, Trace: est}).Eval(c, x, score.WantScore|score.WantTrace); err != nil {
						b.Fatal(err)
					}
					spent[i] += time.Since(start)
				}
			}
			b.ReportMetric(float64(spent[0].Milliseconds())/float64(b.N), "through-ms")
			b.ReportMetric(float64(spent[1].Milliseconds())/float64(b.N), "closed-gradient-ms")
			b.ReportMetric(float64(spent[2].Milliseconds())/float64(b.N), "closed-ms")
		})
	}
}

// BenchmarkEpsNetwork times the committed ε-network through dfx/access's
// host contract at one time for the whole batch (Table 1's "forward"
// case): the full network and its mixture skip alone, at batch 1 and 64.
func BenchmarkEpsNetwork(b *testing.B) {
	store, net := committedEps(b)
	backend := net.Backend
	skip := access.NewNet(backend, store, Schedule(), net.DType, access.Network{Eps: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return models.MixtureEps(scope, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClassOf(scope, x)})
	}})
	x0, err := TestImages(64)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := schedule.At(Schedule(), 0.5)
	for _, bs := range []int{1, 64} {
		x, _ := draw.Queries(c, x0.Slice(0, bs, 0, Dim).(*mat.Dense), rand.New(rand.NewPCG(1, 1)))
		for _, n := range []struct {
			name string
			net  *access.Net
		}{{"forward", net}, {"skip", skip}} {
			b.Run(fmt.Sprintf("%s/B=%d", n.name, bs), func(b *testing.B) {
				timeCalls(b, func() error {
					_, err := n.net.EpsAt(c, x)
					return err
				})
			})
		}
	}
}

// nullClassOf is the null label for every row of x (nil without classes).
func nullClassOf(scope *model.Scope, x *graph.Node) *graph.Node {
	k := model.GetParamOr(scope, models.ParamNumClasses, 0)
	if k == 0 {
		return nil
	}
	return graph.AddScalar(graph.Zeros(x.Graph(), shapes.Make(dtypes.Int32, x.Shape().Dimensions[0])), float64(k))
}

// committedEps loads the committed ε-network and wraps it as an
// access.Net.
func committedEps(tb testing.TB) (*model.Store, *access.Net) {
	tb.Helper()
	backend, err := models.NewBackend()
	if err != nil {
		tb.Fatal(err)
	}
	store, _, err := LoadNetwork("", "eps")
	if err != nil {
		tb.Fatal(err)
	}
	net, err := models.NewAccessNet(backend, store, Schedule(), false)
	if err != nil {
		tb.Fatal(err)
	}
	return store, net
}

// timeCalls times call in b's loop after one call outside it (which
// compiles the graphs), and reports the CPU time (both cores) per call
// beside the wall clock: steadier on a machine that other work shares.
func timeCalls(b *testing.B, call func() error) {
	if err := call(); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExactTrace times the committed ε-network's exact Fisher trace
// at one image and t = 0.5 (one evaluation of the quick-start notebook's
// likelihood cell): by 784 VJPs (access.VJPTrace, one image's rows a call)
// and from the network's structure (models.PatchExactTrace), which is also
// timed at t = 0.3, where its responsibility cut keeps a few components.
func BenchmarkExactTrace(b *testing.B) {
	_, net := committedEps(b)
	vjp, err := access.NewVJPTrace(net, Dim)
	if err != nil {
		b.Fatal(err)
	}
	patch, err := models.PatchExactTrace(net)
	if err != nil {
		b.Fatal(err)
	}
	x0, err := TestImages(1)
	if err != nil {
		b.Fatal(err)
	}
	c, _ := schedule.At(Schedule(), 0.5)
	x, _ := draw.Queries(c, x0, rand.New(rand.NewPCG(1, 1)))
	for _, e := range []score.TraceEstimator{vjp, patch} {
		name := "vjp"
		if e == patch {
			name = "patch"
		}
		b.Run(name, func(b *testing.B) {
			timeCalls(b, func() error {
				_, err := e.Trace(c, x)
				return err
			})
		})
	}
	c3, _ := schedule.At(Schedule(), 0.3)
	x3, _ := draw.Queries(c3, x0, rand.New(rand.NewPCG(1, 1)))
	b.Run("patch-t0.3", func(b *testing.B) {
		timeCalls(b, func() error {
			_, err := patch.Trace(c3, x3)
			return err
		})
	})
}
