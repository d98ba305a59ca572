package onnximport

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/draw"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/gomlx/compute"
)

// The MNIST U-Net of scripts/mnist-unet.py as dfx import made it, timed
// by BenchmarkMNISTUNet beside its PyTorch twin (scripts/bench_torch_unet.py,
// the same network from the same weights), which first checks itself
// against the values TestMNISTUNetTwinFixture writes. Both time the same
// rows: MNIST test images noised at t = 0.5, those of the committed
// ε-network's twin (mnist/epstwin_test.go).
const (
	unetTwinTime    = 0.5
	unetTwinRows    = 64
	unetTwinFixture = "DFX_UNET_TWIN_FIXTURE" // where TestMNISTUNetTwinFixture writes
)

var unetCheckpoint = filepath.Join("..", "..", "examples", "mnist-unet", "unet.dfxckpt")

// mnistUNet is the imported MNIST U-Net on dfx's Go backend (its
// sequential scheduler: the parallel one hangs on imported convolutions),
// its Fisher VJP and its exact VJP trace in calls of rows rows
// (access.PromptRows, as dfx nll makes it).
func mnistUNet(tb testing.TB) (net *access.Net, op *access.VJPMatVec, exact *access.VJPTrace, rows int) {
	tb.Helper()
	backend, err := models.NewBackend()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(backend.Finalize)
	net = unetOn(tb, backend)
	if op, err = access.NewVJPMatVec(net); err != nil {
		tb.Fatal(err)
	}
	rows = access.PromptRows(mnist.Dim)
	if exact, err = access.NewVJPTrace(net, rows); err != nil {
		tb.Fatal(err)
	}
	return net, op, exact, rows
}

// unetOn is the imported MNIST U-Net on backend.
func unetOn(tb testing.TB, backend compute.Backend) *access.Net {
	tb.Helper()
	c, err := checkpoint.Read(unetCheckpoint)
	if err != nil {
		tb.Fatal(err)
	}
	if err := checkpoint.CheckSchedule(c, mnist.Schedule()); err != nil {
		tb.Fatal(err)
	}
	store, err := checkpoint.LoadWeights(c)
	if err != nil {
		tb.Fatal(err)
	}
	net, err := models.NewAccessNet(backend, store, mnist.Schedule(), false)
	if err != nil {
		tb.Fatal(err)
	}
	return net
}

// unetQueries are rows x = α x₀ + σ z of the first n test images x₀ at
// time t, and vectors v, both [n, 784].
func unetQueries(tb testing.TB, t float64, n int, seed uint64) (schedule.Coefficients, *mat.Dense, *mat.Dense) {
	tb.Helper()
	x0, err := mnist.TestImages(n)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := schedule.At(mnist.Schedule(), t)
	if err != nil {
		tb.Fatal(err)
	}
	x, v := draw.Queries(c, x0, rand.New(rand.NewPCG(1, seed)))
	return c, x, v
}

// BenchmarkMNISTUNet times the imported MNIST U-Net at t = 0.5: its
// forward ε_θ and its Fisher VJP (1/σ) ∂⟨ε_θ, v⟩/∂x (access.VJPMatVec) at
// batch 1 and 64, and the exact Fisher trace of one image by 784 VJP rows
// in calls of access.PromptRows rows (what dfx nll's vjp-exact trace runs).
func BenchmarkMNISTUNet(b *testing.B) {
	net, op, exact, rows := mnistUNet(b)
	c, x, v := unetQueries(b, unetTwinTime, unetTwinRows, 1)
	for _, bs := range []int{1, unetTwinRows} {
		xs := x.Slice(0, bs, 0, mnist.Dim).(*mat.Dense)
		b.Run(fmt.Sprintf("forward/B=%d", bs), func(b *testing.B) {
			timeCalls(b, func() error {
				_, err := net.EpsAt(c, xs)
				return err
			})
		})
		vs := v.Slice(0, bs, 0, mnist.Dim).(*mat.Dense)
		b.Run(fmt.Sprintf("vjp/B=%d", bs), func(b *testing.B) {
			timeCalls(b, func() error {
				_, err := op.Apply(score.State{At: c, X: xs}, vs)
				return err
			})
		})
	}
	b.Run(fmt.Sprintf("trace/rows=%d", rows), func(b *testing.B) {
		timeCalls(b, func() error {
			_, err := exact.Trace(c, x.Slice(0, 1, 0, mnist.Dim).(*mat.Dense))
			return err
		})
	})
}

// unetTwinCase is one time's values of the imported U-Net in float64: rows
// x, vectors v, ε_θ(x) and the VJP (1/σ) ∂⟨ε_θ(x), v⟩/∂x, each [Rows, 784]
// row-major, and (Trace) the exact Fisher trace of the first row.
type unetTwinCase struct {
	T, Alpha, Sigma float64
	Rows            int
	X, V, Eps, VJP  []float64
	Trace           float64
}

// unetTwinFile is what TestMNISTUNetTwinFixture writes: the benchmark's
// inputs with the exact trace of its first row (by TraceRows-row calls),
// and the values at three times.
type unetTwinFile struct {
	Dim, TraceRows int
	Bench          unetTwinCase
	Check          []unetTwinCase
}

// TestMNISTUNetTwinFixture writes, when DFX_UNET_TWIN_FIXTURE names a
// file, the imported U-Net's values on 3 test rows at t = 0.02, 0.5 and
// 0.95 and the benchmark's inputs, for scripts/bench_torch_unet.py to
// check its PyTorch twin against; without it, it is skipped (no PyTorch
// here).
func TestMNISTUNetTwinFixture(t *testing.T) {
	path := os.Getenv(unetTwinFixture)
	if path == "" {
		t.Skip(unetTwinFixture + " unset: nothing to write")
	}
	net, op, exact, rows := mnistUNet(t)
	c, x, v := unetQueries(t, unetTwinTime, unetTwinRows, 1)
	tr, err := exact.Trace(c, x.Slice(0, 1, 0, mnist.Dim).(*mat.Dense))
	if err != nil {
		t.Fatal(err)
	}
	out := unetTwinFile{Dim: mnist.Dim, TraceRows: rows, Bench: unetTwinCase{T: c.T, Alpha: c.Alpha, Sigma: c.Sigma,
		Rows: unetTwinRows, X: x.RawMatrix().Data, V: v.RawMatrix().Data, Trace: tr[0]}}
	for i, tt := range []float64{0.02, 0.5, 0.95} {
		c, x, v := unetQueries(t, tt, 3, uint64(2+i))
		eps, err := net.EpsAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		jv, err := op.Apply(score.State{At: c, X: x}, v)
		if err != nil {
			t.Fatal(err)
		}
		out.Check = append(out.Check, unetTwinCase{T: tt, Alpha: c.Alpha, Sigma: c.Sigma, Rows: 3,
			X: x.RawMatrix().Data, V: v.RawMatrix().Data, Eps: eps.RawMatrix().Data, VJP: jv.RawMatrix().Data})
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		t.Fatal(err)
	}
}
