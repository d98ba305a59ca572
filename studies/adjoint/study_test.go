package adjoint

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
)

// TestAdjointQuickRunsAndReports: the quick profile of the guidance study
// on MNIST runs end to end, its numbers are finite, guidance moves the
// class reward, and its report renders.
func TestAdjointQuickRunsAndReports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the networks (≈ 15 s)")
	}
	var log bytes.Buffer
	res, err := RunGuidance(context.Background(), mnist.Problem(), MNISTQuick(), report.Env{Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	for _, run := range res.Runs {
		if math.IsNaN(run.Mean) || math.IsInf(run.Mean, 0) {
			t.Errorf("%s %s n=%d: reward %v", run.Reward, run.Operator, run.Guided, run.Mean)
		}
	}
	n := res.Config.maxGuided()
	if u, v := res.Run(mnist.RewardClass, "none", 0), res.Run(mnist.RewardClass, OperatorVJP, n); u == nil || v == nil || v.Mean <= u.Mean {
		t.Errorf("VJP guidance did not raise the class reward: unguided %+v, guided %+v", u, v)
	}
	for _, g := range res.Exact.Grad {
		if g.Cos < -1-1e-12 || g.Cos > 1+1e-12 || math.IsNaN(g.RelErr) {
			t.Errorf("exact study %s at t=%g: cosine %g, relative error %g", g.Method, g.T, g.Cos, g.RelErr)
		}
	}
	for _, h := range res.Exact.HS {
		if !(h.HS >= 0) || !(h.FisherHS > 0) {
			t.Errorf("exact study %s at t=%g: HS %g, ‖F‖ %g", h.Method, h.T, h.HS, h.FisherHS)
		}
	}
	rep, err := res.Report()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Figures {
		if _, err := f.PNG(); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}
