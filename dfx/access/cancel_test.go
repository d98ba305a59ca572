package access_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/testwait"
	"github.com/dfx-lab/dfx/models"
)

// float32Net is a randomly initialised float32 residual-MLP score network
// (the dtype and kind of the MNIST ε-network; its dimension is the data's).
func float32Net(t *testing.T) *access.Net {
	t.Helper()
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamWidth: 64, models.ParamDepth: 2})
	n, err := models.NewAccessNet(models.MustNewBackend(), store, schedule.DefaultVP(), false)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestVJPTraceInChunksEqualsOneCallToFloat32RoundOff(t *testing.T) {
	const d = 64
	net := float32Net(t)
	x := randomRows(3, d, 7)
	c, err := schedule.At(schedule.DefaultVP(), 0.4)
	if err != nil {
		t.Fatal(err)
	}
	one, err := access.NewVJPTrace(net, 3*d) // all 3 points' d VJPs in one graph call
	if err != nil {
		t.Fatal(err)
	}
	want, err := one.Trace(c, x)
	if err != nil {
		t.Fatal(err)
	}
	// 5 rows a call: chunks that straddle points, and a short last one
	for _, rows := range []int{5, 16, d, access.PromptRows(d)} {
		est, err := access.NewVJPTrace(net, rows)
		if err != nil {
			t.Fatal(err)
		}
		got, err := est.TraceContext(context.Background(), c, x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			// the sum of d float32 diagonal entries, each rounded alike
			if diff := math.Abs(got[i] - want[i]); diff > 1e-6*math.Abs(want[i]) {
				t.Errorf("%d rows a call: point %d trace %.9g, one call %.9g (diff %.3g)", rows, i, got[i], want[i], diff)
			}
		}
	}
}

func TestVJPTraceStopsAtTheFirstChunkAfterACancel(t *testing.T) {
	const d = 64
	net := float32Net(t)
	x := randomRows(2, d, 3)
	c, _ := schedule.At(schedule.DefaultVP(), 0.4)
	est, err := access.NewVJPTrace(net, 8) // 16 graph calls
	if err != nil {
		t.Fatal(err)
	}
	for _, cancelAt := range []int{1, 2, 5} {
		ctx := testwait.NewCounting(cancelAt)
		_, err := est.TraceContext(ctx, c, x)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled at check %d: error %v, want context.Canceled", cancelAt, err)
		}
		if ctx.Calls != cancelAt {
			t.Errorf("cancelled at check %d of 16 chunks: went on to check %d", cancelAt, ctx.Calls)
		}
	}
	ctx := testwait.NewCounting(0)
	if _, err := est.TraceContext(ctx, c, x); err != nil || ctx.Calls != 16 {
		t.Errorf("uncancelled: error %v after %d checks, want none after 16 (one per graph call)", err, ctx.Calls)
	}
}

func TestNetModelStopsInsideAnEvaluationOnceCancelled(t *testing.T) {
	const d = 64
	net := float32Net(t)
	c, _ := schedule.At(schedule.DefaultVP(), 0.4)
	vjp, _ := access.NewVJPTrace(net, 16)
	hutch, _ := access.NewHutchinson(net, 4, access.Rademacher, 1)
	hpp, _ := access.NewHutchPP(net, 6, 1)
	cv := access.ControlVariate{Known: hutch, Residual: vjp}
	for _, tc := range []struct {
		name    string
		est     score.TraceEstimator
		perCall int
	}{{"vjp", vjp, 0}, {"hutchinson by points", hutch, 1}, {"hutch++ by points", hpp, 1}, {"control variate", cv, 0}} {
		m := access.NetModel{Net: net, Trace: tc.est, PerCall: tc.perCall}
		x := randomRows(4, d, 5)
		ctx := testwait.NewCounting(3)
		_, err := score.EvalContext(ctx, m, c, x, score.WantTrace)
		if !errors.Is(err, context.Canceled) || ctx.Calls != 3 {
			t.Errorf("%s: error %v after %d checks, want context.Canceled at the 3rd", tc.name, err, ctx.Calls)
		}
		// bound to a context, the plain contract stops too (what a solver sees)
		ctx = testwait.NewCounting(3)
		if _, err := score.WithContext(ctx, m).Eval(c, x, score.WantTrace); !errors.Is(err, context.Canceled) {
			t.Errorf("%s bound by WithContext: error %v, want context.Canceled", tc.name, err)
		}
	}
}

// TestHutchinsonRowsPerCallLeaveTheProbesAlone: SetMaxRows changes only how
// the probes' rows are split into graph calls, so the estimates equal one
// call's to float32 round-off; the probes of one Trace call are a single
// stream, so identical points get different estimates.
func TestHutchinsonRowsPerCallLeaveTheProbesAlone(t *testing.T) {
	const d, k, b = 64, 4, 8
	net := float32Net(t)
	row := randomRows(1, d, 5)
	x := randomRows(b, d, 5)
	for i := range b {
		x.SetRow(i, row.RawRowView(0))
	}
	c, _ := schedule.At(schedule.DefaultVP(), 0.4)
	one, err := access.NewHutchinson(net, k, access.Rademacher, 9)
	if err != nil {
		t.Fatal(err)
	}
	want, err := one.Trace(c, x)
	if err != nil {
		t.Fatal(err)
	}
	if want[0] == want[b-1] {
		t.Errorf("identical points got the same estimate %g: their probes repeat", want[0])
	}
	for _, rows := range []int{1, 3, access.PromptRows(d)} {
		est, _ := access.NewHutchinson(net, k, access.Rademacher, 9)
		est.SetMaxRows(rows)
		got, err := est.TraceContext(context.Background(), c, x)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if diff := math.Abs(got[i] - want[i]); diff > 1e-5*math.Abs(want[i]) {
				t.Errorf("%d rows a call: point %d estimate %.9g, one call %.9g", rows, i, got[i], want[i])
			}
		}
	}
}
