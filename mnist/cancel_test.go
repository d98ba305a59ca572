package mnist

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/testwait"
	"github.com/dfx-lab/dfx/models"
)

func TestDequantizingStopsAtTheFirstCheckAfterACancel(t *testing.T) {
	set := &Set{Images: &Images{N: 5000, Rows: 28, Cols: 28, Pixels: make([]uint8, 5000*Dim)}}
	ctx := testwait.NewCounting(2)
	if _, err := set.DequantizedContext(ctx, 0, 5000, 1); !errors.Is(err, context.Canceled) || ctx.Calls != 2 {
		t.Errorf("error %v after %d checks, want context.Canceled at the 2nd", err, ctx.Calls)
	}
	ctx = testwait.NewCounting(0)
	x, err := set.DequantizedContext(ctx, 0, 5000, 1)
	want, _ := set.Dequantized(0, 5000, 1)
	if err != nil || ctx.Calls != 5 || !equalRows(x.RawMatrix().Data, want.RawMatrix().Data) {
		t.Errorf("uncancelled: error %v after %d checks (want 5, one per 1024 rows), or other pixels than Dequantized's", err, ctx.Calls)
	}
}

func equalRows(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDDIMSamplingStopsBetweenStepsOnceCancelled(t *testing.T) {
	nets, err := OpenEps(models.MustNewBackend(), "", "eps")
	if err != nil {
		t.Fatal(err)
	}
	cfg := SampleConfig{Steps: 10, Seed: 3}
	class, scale := []int{1, 7}, []float64{3, 3}
	ctx := testwait.NewCounting(3)
	if _, err := nets.SampleRowsContext(ctx, cfg, class, scale, 0, 2); !errors.Is(err, context.Canceled) || ctx.Calls != 3 {
		t.Errorf("error %v after %d checks, want context.Canceled at the 3rd of 10 steps", err, ctx.Calls)
	}
	ctx = testwait.NewCounting(0)
	if _, err := nets.SampleContext(ctx, cfg, class, scale); err != nil || ctx.Calls != 10 {
		t.Errorf("uncancelled: error %v after %d checks, want none after 10 (one per step)", err, ctx.Calls)
	}
}

// The exact trace in short graph calls (what lets a run stop between
// them) is the one-call trace to float32 round-off on the committed
// ε-network, whose mixture skip makes a call's cost grow with its rows.
func TestChunkedExactTraceOfTheEpsNetworkIsTheOneCallTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("784 VJPs of the MNIST network, twice")
	}
	nets, err := OpenNetworks("")
	if err != nil {
		t.Fatal(err)
	}
	c, err := schedule.At(Schedule(), 0.3)
	if err != nil {
		t.Fatal(err)
	}
	x := InitialNoise(5, 0, 1)
	var tr [2]float64
	for i, rows := range []int{Dim, access.PromptRows(Dim)} {
		est, err := access.NewVJPTrace(nets.Net, rows)
		if err != nil {
			t.Fatal(err)
		}
		v, err := est.Trace(c, x)
		if err != nil {
			t.Fatal(err)
		}
		tr[i] = v[0]
	}
	t.Logf("one call %.9g, %d rows a call %.9g", tr[0], access.PromptRows(Dim), tr[1])
	if math.Abs(tr[1]-tr[0]) > 1e-6*math.Abs(tr[0]) {
		t.Errorf("chunked trace %.9g, one call %.9g", tr[1], tr[0])
	}
}
