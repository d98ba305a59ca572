package access_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/models"
)

// benchNet is a randomly initialised residual-MLP score + DF-TM network
// (float32, width 256, depth 3) on d dimensions: timing does not depend on
// training, and every method runs on the same network.
func benchNet(b *testing.B, d int) (*access.Net, *mat.Dense) {
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamWidth: 256, models.ParamDepth: 3})
	n, err := models.NewAccessNet(models.MustNewBackend(), store, schedule.DefaultVP(), true)
	if err != nil {
		b.Fatal(err)
	}
	return n, randomRows(4, d, 1)
}

// BenchmarkAccess times one batch of 4 queries for each access method at
// d = 2, 64, 784 on the same network; ns/op ÷ the vjp-exact line of the same d
// is the speed-up over the exact VJP trace.
func BenchmarkAccess(b *testing.B) {
	const tm = 0.5
	for _, d := range []int{2, 64, 784} {
		net, x := benchNet(b, d)
		v := mat.NewDense(4, d, nil)
		for i := range 4 {
			v.Set(i, i%d, 1)
		}
		vjp, _ := access.NewVJPTrace(net, 0)
		hut, _ := access.NewHutchinson(net, 8, access.Rademacher, 1)
		hpp, _ := access.NewHutchPP(net, 24, 1)
		mv, _ := access.NewVJPMatVec(net)
		tm2, _ := access.NewDFTM(net)
		ea, _ := access.NewDFEA(net)
		c, _ := schedule.At(net.Schedule, tm)
		mix, err := access.NewMixture(net.Backend, net.Schedule, dtypes.Float32, randomRows(1000, d, 2))
		if err != nil {
			b.Fatal(err)
		}
		traces := []score.TraceEstimator{vjp, hut, hpp, tm2, mix}
		for _, e := range traces {
			b.Run(fmt.Sprintf("d=%d/trace/%s", d, e.Name()), func(b *testing.B) {
				if _, err := e.Trace(c, x); err != nil { // compile outside the timer
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := e.Trace(c, x); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		for _, op := range []score.FisherOperator{mv, ea, mix} {
			b.Run(fmt.Sprintf("d=%d/matvec/%s", d, op.Name()), func(b *testing.B) {
				if _, err := op.Apply(score.State{At: c, X: x, Endpoint: x}, v); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := op.Apply(score.State{At: c, X: x, Endpoint: x}, v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// randomRows is an [n, d] matrix of standard normal entries.
func randomRows(n, d int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, uint64(d)))
	m := mat.NewDense(n, d, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = rng.NormFloat64()
	}
	return m
}
