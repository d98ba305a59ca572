package onnximport

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
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
	wantVJP, errA := access.NewVJPMatVec(want)
	gotVJP, errB := access.NewVJPMatVec(got)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	const rows = unetTwinRows
	for k, tt := range []float64{0.02, 0.5, 0.95} {
		c, x, v := unetQueries(t, tt, rows, uint64(k))
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
