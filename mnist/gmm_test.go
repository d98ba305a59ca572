package mnist

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// TestMixtureCheckpointRoundTrips: a fitted mixture written as a checkpoint
// and read back gives the same exact log q (to float32 storage) and the
// test bpd its record states.
func TestMixtureCheckpointRoundTrips(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a mixture to the MNIST training set")
	}
	opt := mixture.FitOptions{Components: 1, PerClass: true, Rank: 8, Shrink: 0.2, Idle: 1e-4, Seed: 1}
	c, rec, err := FitMixtureCheckpoint(context.Background(), opt, 100)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "g.dfxckpt")
	if err := c.Write(path); err != nil {
		t.Fatal(err)
	}
	g, err := LoadMixture(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Components() != 10 || len(g.Classes()) != 10 {
		t.Fatalf("read back %d components, labels %v", g.Components(), g.Classes())
	}
	bpd, _, err := MixtureBPD(g, 100)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(bpd-rec.TestBPD) > 1e-3 || !(bpd > 4 && bpd < 7) {
		t.Errorf("read-back mixture: %.5f bpd, the fit recorded %.5f", bpd, rec.TestBPD)
	}
	// A class-conditional query of the rebuilt mixture is a proper density of its class.
	three, err := g.Restrict(3)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := Load(Test)
	x, _ := set.Dequantized(0, 1, 2)
	co, _ := schedule.At(Schedule(), 0.5)
	r, err := three.Eval(mixture.Query{At: co, X: mat.DenseCopyOf(x), Want: mixture.LogProb})
	if err != nil || math.IsNaN(r.LogProb[0]) {
		t.Errorf("class-conditional log q %v (%v)", r.LogProb, err)
	}
}
