package adjoint_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// Adjoint guidance on a two-component Gaussian mixture in the plane, 80%
// of its mass at (2, 0): guidance with the exact Fisher and the loss
// ‖x₀ − (−2, 0)‖²/2 over the middle outer steps sends most samples to the
// rarer component. The same noise is sampled without guidance for
// comparison.
func ExampleGuide_Sample() {
	means := mat.NewDense(2, 2, []float64{2, 0, -2, 0})
	cov := mat.NewSymDense(2, []float64{0.3, 0.1, 0.1, 0.2})
	m, err := mixture.NewGaussian(means, []*mat.SymDense{cov, cov}, []float64{0.8, 0.2})
	if err != nil {
		panic(err)
	}
	g := adjoint.Guide{
		Schedule: schedule.DefaultVP(),
		Model:    score.Exact{Mixture: m},
		Operator: score.Exact{Mixture: m},
		Loss:     adjoint.SquaredDistance([]float64{-2, 0}),
	}
	xT := schedule.SamplePrior(schedule.Prior(g.Schedule), 200, 2, rand.New(rand.NewPCG(1, 1)))
	left := func(x *mat.Dense) float64 {
		n := 0
		for i := range x.RawMatrix().Rows {
			if x.At(i, 0) < 0 {
				n++
			}
		}
		return float64(n) / float64(x.RawMatrix().Rows)
	}
	cfg := adjoint.Config{Steps: 25, InnerSteps: 5}
	plain, err := g.Sample(context.Background(), xT, cfg)
	if err != nil {
		panic(err)
	}
	cfg.From, cfg.To, cfg.Strength, cfg.Normalize = 5, 20, 0.1, true
	guided, err := g.Sample(context.Background(), xT, cfg)
	if err != nil {
		panic(err)
	}
	fmt.Printf("unguided: %.2f of the samples near (−2, 0)\n", left(plain.X))
	fmt.Printf("guided:   %.2f of the samples near (−2, 0)\n", left(guided.X))
	fmt.Printf("network evaluations %d, Fisher products %d\n", guided.ModelEvals, guided.OperatorCalls)
	// Output:
	// unguided: 0.19 of the samples near (−2, 0)
	// guided:   0.78 of the samples near (−2, 0)
	// network evaluations 100, Fisher products 75
}
