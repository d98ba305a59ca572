package mnist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/draw"
	"github.com/dfx-lab/dfx/models"
)

// TestPatchExactTraceOfTheCommittedNetwork: on the committed ε-network
// (float32), the structured exact trace (models.PatchExactTrace) equals
// the 784 VJPs of access.VJPTrace on two test images at small, middle and
// large t, to the float32 rounding of the VJP sum.
func TestPatchExactTraceOfTheCommittedNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("784 VJPs of the committed network per point")
	}
	_, net := committedEps(t)
	vjp, err := access.NewVJPTrace(net, Dim)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := models.PatchExactTrace(net)
	if err != nil || patch == nil {
		t.Fatalf("PatchExactTrace: %v, %v", patch, err)
	}
	x0, err := TestImages(2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []float64{0.01, 0.3, 0.9} {
		c, _ := schedule.At(Schedule(), tt)
		x, _ := draw.Queries(c, x0, rand.New(rand.NewPCG(1, 1)))
		want, err := vjp.Trace(c, x)
		if err != nil {
			t.Fatal(err)
		}
		got, err := patch.Trace(c, x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			rel := math.Abs(got[i]-want[i]) / math.Abs(want[i])
			t.Logf("t = %g, image %d: structured %.9g, VJP %.9g, relative difference %.2g", tt, i, got[i], want[i], rel)
			if rel > 1e-6 {
				t.Errorf("t = %g, image %d: structured trace %.9g, VJP trace %.9g", tt, i, got[i], want[i])
			}
		}
	}
}
