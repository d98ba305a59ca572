package onnximport

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

var benchBackend = flag.String("gobackend", models.GoBackendOptions, "the Go backend's configuration for the benchmarks")

// BenchmarkImportedUNet28 times the 28×28 U-Net fixture on the Go backend,
// with its convolutions as sums of matrix products (conv=products, what
// Import does) and as onnx-gomlx's ConvGeneral (conv=general),
// interleaved: its forward ε_θ and the VJP quadratic forms vᵀ(∂ε_θ/∂x)v
// that the exact trace is made of (one row per vector), at 1, 28 (the
// exact trace's calls, access.PromptRows) and 64 rows a call. cpu-ms/op is
// the process's CPU time, steadier than the wall clock on a shared machine.
func BenchmarkImportedUNet28(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(testdata, "unet28.onnx"))
	if err != nil {
		b.Fatal(err)
	}
	backend, err := gobackend.New(*benchBackend)
	if err != nil {
		b.Fatal(err)
	}
	defer backend.Finalize()
	opt := Options{Param: "eps", Schedule: schedule.DefaultVP(), Time: models.TimeT, TimeScale: 999, ClassInput: "y", NumClasses: 10}
	nets := map[string]*access.Net{}
	kinds := []string{"products", "general"}
	for _, kind := range kinds {
		im, err := importModel(raw, opt, kind == "products")
		if err != nil {
			b.Fatal(err)
		}
		if nets[kind], err = im.Net(backend); err != nil {
			b.Fatal(err)
		}
	}
	c, err := schedule.At(opt.Schedule, 0.3)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := mat.NewDense(1, 784, nil)
	for j := range 784 {
		x.Set(0, j, rng.NormFloat64())
	}
	for _, rows := range []int{1, 28, 64} {
		xs := mat.NewDense(rows, 784, nil)
		for i := range rows {
			xs.SetRow(i, x.RawRowView(0))
		}
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("forward/B=%d/conv=%s", rows, kind), func(b *testing.B) {
				timeCalls(b, func() error {
					_, err := nets[kind].EpsAt(c, xs)
					return err
				})
			})
		}
		for _, kind := range kinds {
			hutch, err := access.NewHutchinson(nets[kind], rows, access.Rademacher, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("vjp-quad/rows=%d/conv=%s", rows, kind), func(b *testing.B) {
				timeCalls(b, func() error {
					_, err := hutch.Trace(c, x)
					return err
				})
			})
		}
	}
}

// timeCalls times call in b's loop after one call outside it (which
// compiles the graphs), and reports the process's CPU time per call beside
// the wall clock.
func timeCalls(b *testing.B, call func() error) {
	if err := call(); err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime()
	for b.Loop() {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time this process has used (user + system): under a
// shared machine's load, a steadier measure of work than the wall clock.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
