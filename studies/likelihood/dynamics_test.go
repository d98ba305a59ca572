package likelihood

import (
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestLikelihoodDynamicsTakesTheStructuredExactTrace: the committed
// ε-network's exact trace in the likelihood dynamics is
// models.PatchExactTrace's (the same number as 784 VJPs:
// TestPatchExactTraceOfTheCommittedNetwork in mnist), the other methods
// are the registry's.
func TestLikelihoodDynamicsTakesTheStructuredExactTrace(t *testing.T) {
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
	for method, structured := range map[string]bool{"vjp-exact": true, "vjp": true, "df-tm": false, "hutchinson-2": false} {
		dyn, err := LikelihoodDynamics(nets, method, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := dyn.(access.NetModel).Trace.(*models.PatchTrace); ok != structured {
			t.Errorf("%s: trace %T", method, dyn.(access.NetModel).Trace)
		}
	}
}

// BenchmarkQuickstartLikelihood is the quick-start notebook's likelihood
// cell: 4 test images, Heun with 10 steps, the DF-TM trace and the exact
// trace (LikelihoodDynamics: from the network's structure), and the exact
// trace by 784 VJPs for comparison; it reports each run's mean bits per
// dimension.
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
	for _, method := range []string{"df-tm", "vjp-exact", "vjp-exact-by-vjps"} {
		b.Run(method, func(b *testing.B) {
			var dyn score.Model
			if method == "vjp-exact-by-vjps" {
				vjp, err := access.NewVJPTrace(nets.Net, mnist.Dim)
				if err != nil {
					b.Fatal(err)
				}
				dyn = access.NetModel{Net: nets.Net, Trace: vjp}
			} else if dyn, err = LikelihoodDynamics(nets, method, 1); err != nil {
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
