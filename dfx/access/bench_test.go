package access

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// benchNet is a randomly initialised residual-MLP score + DF-TM network
// (float32, width 256, depth 3) on d dimensions: timing does not depend on
// training, and every method runs on the same network.
func benchNet(b *testing.B, d int) (*Net, [][]float64) {
	ctx := models.NewStore()
	ctx.SetParams(map[string]any{models.ParamWidth: 256, models.ParamDepth: 3})
	n, err := FromModel(models.MustNewBackend(), ctx, schedule.DefaultVP(), true)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, uint64(d)))
	x := make([][]float64, 4)
	for i := range x {
		x[i] = make([]float64, d)
		for j := range x[i] {
			x[i][j] = rng.NormFloat64()
		}
	}
	return n, x
}

// BenchmarkAccess times one batch of 4 queries for each access method at
// d = 2, 64, 784 on the same network; ns/op ÷ the vjp-exact line of the same d
// is the speed-up over the exact VJP trace.
func BenchmarkAccess(b *testing.B) {
	const tm = 0.5
	for _, d := range []int{2, 64, 784} {
		net, x := benchNet(b, d)
		v := make([][]float64, len(x))
		for i := range v {
			v[i] = make([]float64, d)
			v[i][i%d] = 1
		}
		vjp, _ := NewVJPTrace(net, 0)
		hut, _ := NewHutchinson(net, 8, Rademacher, 1)
		hpp, _ := NewHutchPP(net, 24, 1)
		mv, _ := NewVJPMatVec(net)
		tm2, _ := NewDFTM(net)
		ea, _ := NewDFEA(net, func(x [][]float64, _ float64) ([][]float64, error) { return x, nil })
		mix, err := NewMixture(net.Backend, net.Schedule, dtypes.Float32, randomRows(1000, d))
		if err != nil {
			b.Fatal(err)
		}
		traces := []TraceEstimator{vjp, hut, hpp, tm2, mix}
		for _, e := range traces {
			b.Run(fmt.Sprintf("d=%d/trace/%s", d, e.Name()), func(b *testing.B) {
				if _, err := e.Trace(x, tm); err != nil { // compile outside the timer
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := e.Trace(x, tm); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		for _, op := range []FisherOperator{mv, ea, mix} {
			b.Run(fmt.Sprintf("d=%d/matvec/%s", d, op.Name()), func(b *testing.B) {
				if _, err := op.MatVec(x, tm, v); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := op.MatVec(x, tm, v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func randomRows(n, d int) [][]float64 {
	return gaussianRows(rand.New(rand.NewPCG(2, uint64(d))), n, d)
}
