package likelihood

import (
	"math"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestExploreRunsRenderTheirSettings: the notebooks' knob runs on the
// committed networks, at toy sizes, report what they were asked for.
func TestExploreRunsRenderTheirSettings(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the committed networks")
	}
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	nets, err := mnist.LoadNetworks(backend, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ExploreSamples(nets, 7, 2, 2, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r, c := s.Images.Dims(); r != 2 || c != mnist.Dim || len(s.LogP) != 2 || s.LogP[0] > 0 {
		t.Errorf("samples %d×%d, log p %v", r, c, s.LogP)
	}
	test, err := mnist.Load(mnist.Test)
	if err != nil {
		t.Fatal(err)
	}
	y, err := test.Scaled(100, 50)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := mixture.NewDirac(y, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ExploreFisher(nets, mix, test, FisherQueries{T: 0.5, Images: 2, Chosen: "df-tm", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Estimates["df-tm"]) != 2 || len(f.Operators) != 2 {
		t.Errorf("estimates %v, operators %v", f.Estimates, f.Operators)
	}
	for name, res := range map[string]interface {
		Report() (*report.Report, error)
	}{"samples": s, "fisher": f} {
		rep, err := res.Report()
		if err != nil {
			t.Fatal(err)
		}
		h, err := rep.HTML()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(h, "data:image/png;base64,") {
			t.Errorf("%s: no figure", name)
		}
	}
}

func TestSpearman(t *testing.T) {
	for _, c := range []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}, 1},
		{[]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, -1},
		{[]float64{1, 2, 3, 4, 5}, []float64{1, 4, 9, 16, 25}, 1}, // monotone, not linear
		{[]float64{1, 2, 2, 3}, []float64{1, 2, 3, 4}, 0.9486832980505138},
	} {
		if got := Spearman(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Spearman(%v, %v) = %g, want %g", c.a, c.b, got, c.want)
		}
	}
}
