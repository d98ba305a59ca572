package onnximport

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// The committed MNIST U-Net (examples/mnist-unet) gives the same ε̂ and
// Fisher VJP on the backend GOMLX_BACKEND selects as on the Go backend,
// and the test logs the selected backend's speed. It runs only when
// another backend is selected, e.g. on a GPU machine:
//
//	go test -tags xla -c -o onnximport.test ./models/onnximport/
//	GOMLX_BACKEND=xla:cuda scripts/gpu-xla.sh ./onnximport.test -test.run OnTheSelectedBackend -test.v
func TestImportedUNetOnTheSelectedBackend(t *testing.T) {
	if b := os.Getenv("GOMLX_BACKEND"); b == "" || strings.HasPrefix(b, "go") {
		t.Skip("GOMLX_BACKEND selects no other backend than Go's")
	}
	goBackend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer goBackend.Finalize()
	selected, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	want, got := unetOn(t, goBackend), unetOn(t, selected)
	rng := rand.New(rand.NewPCG(1, 2))
	const rows = 64
	x, v := mat.NewDense(rows, 784, nil), mat.NewDense(rows, 784, nil)
	for i := range rows {
		for j := range 784 {
			x.Set(i, j, 2*rng.Float64()-1)
			v.Set(i, j, rng.NormFloat64())
		}
	}
	wantVJP, errA := access.NewVJPMatVec(want)
	gotVJP, errB := access.NewVJPMatVec(got)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	for _, tt := range []float64{0.02, 0.5, 0.95} {
		c, err := schedule.At(want.Schedule, tt)
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range []struct {
			name      string
			want, got func() (*mat.Dense, error)
		}{
			{"ε̂", func() (*mat.Dense, error) { return want.EpsAt(c, x) }, func() (*mat.Dense, error) { return got.EpsAt(c, x) }},
			{"F·v", func() (*mat.Dense, error) { return wantVJP.Apply(score.State{At: c, X: x}, v) },
				func() (*mat.Dense, error) { return gotVJP.Apply(score.State{At: c, X: x}, v) }},
		} {
			name := call.name
			a, errA := call.want()
			start := time.Now()
			b, errB := call.got()
			if errA != nil || errB != nil {
				t.Fatalf("%s at t = %g: %v, %v", name, tt, errA, errB)
			}
			if e := stats.RelNorm(b.RawMatrix().Data, a.RawMatrix().Data); e > 1e-4 {
				t.Errorf("%s at t = %g on %s: relative error %.2g against the Go backend", name, tt, selected.Name(), e)
			}
			t.Logf("%s at t = %g, %d rows on %s: %v (compiling included at the first t); relative difference %.2g",
				name, tt, rows, selected.Name(), time.Since(start), stats.RelNorm(b.RawMatrix().Data, a.RawMatrix().Data))
		}
	}
}

// unetOn is the committed MNIST U-Net on backend.
func unetOn(t *testing.T, backend compute.Backend) *access.Net {
	t.Helper()
	c, err := checkpoint.Read(filepath.Join("..", "..", "examples", "mnist-unet", "unet.dfxckpt"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.LoadWeights(c)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := c.Header.Provenance.Schedule.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	net, err := models.NewAccessNet(backend, store, sched, false)
	if err != nil {
		t.Fatal(err)
	}
	return net
}
