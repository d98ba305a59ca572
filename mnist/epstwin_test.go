package mnist

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/draw"
	"github.com/dfx-lab/dfx/models"
)

// The committed ε-network's cases that scripts/bench_torch_eps.py times
// against its PyTorch twin: the batches are those of BenchmarkEpsNetwork
// (the same test images and noise at t = 0.5), so that both sides time the
// same inputs.
const (
	twinTime    = 0.5
	twinRows    = 64
	twinFixture = "DFX_EPS_TWIN_FIXTURE" // where TestEpsTwinFixture writes
)

// twinQueries are the rows x and vectors v [twinRows, Dim] of
// BenchmarkEpsNetwork at twinTime (its batch of b rows is the first b).
func twinQueries(tb testing.TB) (schedule.Coefficients, *mat.Dense, *mat.Dense) {
	tb.Helper()
	x0, err := TestImages(twinRows)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := schedule.At(Schedule(), twinTime)
	if err != nil {
		tb.Fatal(err)
	}
	x, v := draw.Queries(c, x0, rand.New(rand.NewPCG(1, 1)))
	return c, x, v
}

// BenchmarkEpsNetworkVJP times the committed ε-network's Fisher VJP
// (access.VJPMatVec: (1/σ) ∂⟨ε̂(x), v⟩/∂x, row-wise, one time for the
// batch) at batch 1 and 64, beside BenchmarkEpsNetwork's forward.
func BenchmarkEpsNetworkVJP(b *testing.B) {
	_, net := committedEps(b)
	op, err := access.NewVJPMatVec(net)
	if err != nil {
		b.Fatal(err)
	}
	c, x, v := twinQueries(b)
	for _, bs := range []int{1, twinRows} {
		s := score.State{At: c, X: x.Slice(0, bs, 0, Dim).(*mat.Dense)}
		vs := v.Slice(0, bs, 0, Dim).(*mat.Dense)
		b.Run(fmt.Sprintf("vjp/B=%d", bs), func(b *testing.B) {
			timeCalls(b, func() error {
				_, err := op.Apply(s, vs)
				return err
			})
		})
	}
}

// twinCase is one time's values of the committed ε-network, in float64:
// the rows x, vectors v, ε̂(x), its mixture skip ε_mix(x) and the VJP
// (1/σ) ∂⟨ε̂(x), v⟩/∂x, each [Rows, Dim] row-major.
type twinCase struct {
	T, Alpha, Sigma      float64
	Rows                 int
	X, V, Eps, Skip, VJP []float64
}

// twinFile is what TestEpsTwinFixture writes: the benchmark's inputs and
// the values the twin must reproduce.
type twinFile struct {
	Dim   int
	Bench twinCase // the timed batch (x, v only)
	Check []twinCase
}

// TestEpsTwinFixture writes, when DFX_EPS_TWIN_FIXTURE names a file, the
// committed ε-network's values on a few rows at three times and the
// benchmark's inputs, for scripts/bench_torch_eps.py to check its PyTorch
// twin against; without it, it is skipped.
func TestEpsTwinFixture(t *testing.T) {
	path := os.Getenv(twinFixture)
	if path == "" {
		t.Skip(twinFixture + " unset: nothing to write")
	}
	store, net := committedEps(t)
	skip := skipNet(store, net)
	op, err := access.NewVJPMatVec(net)
	if err != nil {
		t.Fatal(err)
	}
	c, x, v := twinQueries(t)
	out := twinFile{Dim: Dim, Bench: twinCase{T: c.T, Alpha: c.Alpha, Sigma: c.Sigma, Rows: twinRows, X: x.RawMatrix().Data, V: v.RawMatrix().Data}}
	x0, err := TestImages(3)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range []float64{0.02, 0.5, 0.95} {
		c, err := schedule.At(Schedule(), tt)
		if err != nil {
			t.Fatal(err)
		}
		x, v := draw.Queries(c, x0, rand.New(rand.NewPCG(2, uint64(i))))
		eps, err := net.EpsAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		mix, err := skip.EpsAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		jv, err := op.Apply(score.State{At: c, X: x}, v)
		if err != nil {
			t.Fatal(err)
		}
		out.Check = append(out.Check, twinCase{T: tt, Alpha: c.Alpha, Sigma: c.Sigma, Rows: x.RawMatrix().Rows,
			X: x.RawMatrix().Data, V: v.RawMatrix().Data, Eps: eps.RawMatrix().Data, Skip: mix.RawMatrix().Data, VJP: jv.RawMatrix().Data})
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		t.Fatal(err)
	}
}

// skipNet is the committed ε-network's mixture skip alone (null class) as
// an access.Net beside net.
func skipNet(store *model.Store, net *access.Net) *access.Net {
	return access.NewNet(net.Backend, store, Schedule(), net.DType, access.Network{Eps: func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return models.MixtureEps(scope, models.Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClassOf(scope, x)})
	}})
}
