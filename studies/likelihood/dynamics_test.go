package likelihood

import (
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestSkipExactIsRegisteredForTheCommittedNetwork: the committed
// ε-network's exact trace from its structure is the registry's
// "skip-exact" (the same number as 784 VJPs:
// TestPatchExactTraceOfTheCommittedNetwork in mnist); "vjp-exact" stays
// the d VJPs.
func TestSkipExactIsRegisteredForTheCommittedNetwork(t *testing.T) {
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
	for method, structured := range map[string]bool{"skip-exact": true, "vjp-exact": false, "vjp": false, "df-tm": false} {
		dyn, err := LikelihoodDynamics(nets, method, 1)
		if err != nil {
			t.Fatal(err)
		}
		if tr, ok := dyn.(access.NetModel).Trace.(*models.PatchTrace); ok != structured || ok && tr.Name() != "skip-exact" {
			t.Errorf("%s: trace %T", method, dyn.(access.NetModel).Trace)
		}
	}
}

// BenchmarkQuickstartLikelihood is the quick-start notebook's likelihood
// cell: 4 test images, Heun with 10 steps, the DF-TM trace and the exact
// trace from the network's structure (skip-exact), and the exact trace by
// 784 VJPs for comparison; it reports each run's mean bits per dimension.
func BenchmarkQuickstartLikelihood(b *testing.B) {
	backend, err := models.NewBackend()
	if err != nil {
		b.Fatal(err)
	}
	nets, err := mnist.LoadNetworks(backend, "")
	if err != nil {
		b.Fatal(err)
	}
	test, err := mnist.Load(mnist.Test)
	if err != nil {
		b.Fatal(err)
	}
	x, err := test.Dequantized(0, 4, 1)
	if err != nil {
		b.Fatal(err)
	}
	lo, hi := mnist.Schedule().Interval()
	cfg := likelihood.Config{Schedule: mnist.Schedule(), T0: lo + (hi-lo)/10, Steps: 10, Solver: likelihood.Heun}
	for _, method := range []string{"df-tm", "skip-exact", "vjp-exact"} {
		b.Run(method, func(b *testing.B) {
			dyn, err := LikelihoodDynamics(nets, method, 1)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				r, err := likelihood.LogProb(x, dyn, cfg)
				if err != nil {
					b.Fatal(err)
				}
				bpd, err := likelihood.BitsPerDim(r.LogProb, mnist.Dim, &mnist.Quant)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(stat.Mean(bpd, nil), "bpd")
				b.Logf("%s: bits per dimension %v (%d evaluations)", method, bpd, r.Evals)
			}
		})
	}
}
