package mnist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/draw"
)

// TestCommittedEpsAtOneTimeIsUnchanged: the committed ε-network (float32)
// through dfx/access's host calls, whose mixture skip computes its
// t-dependent factors once per batch, gives the ε of the per-row graph
// (what training evaluates) to 1e-6 of its largest entry, at low, middle
// and high noise, in a small and a large batch.
func TestCommittedEpsAtOneTimeIsUnchanged(t *testing.T) {
	store, net := committedEps(t)
	x16, err := TestImages(16)
	if err != nil {
		t.Fatal(err)
	}
	perRow := model.MustNewExec(net.Backend, store, func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return net.Eps(scope, x, alpha, sigma)
	})
	for i, tt := range []float64{0.01, 0.3, 0.9} {
		b := []int{4, 16}[i%2] // both ways of the skip's back projection
		c, _ := schedule.At(Schedule(), tt)
		x, _ := draw.Queries(c, x16.Slice(0, b, 0, Dim).(*mat.Dense), rand.New(rand.NewPCG(2, 3)))
		got, err := net.EpsAt(c, x)
		if err != nil {
			t.Fatal(err)
		}
		rows := make([][]float32, b)
		al, sg := make([]float32, b), make([]float32, b)
		for i := range rows {
			rows[i] = make([]float32, Dim)
			for j := range rows[i] {
				rows[i][j] = float32(x.At(i, j))
			}
			al[i], sg[i] = float32(c.Alpha), float32(c.Sigma)
		}
		want := tensors.MustCopyFlatData[float32](perRow.MustExec1(rows, al, sg))
		e := maxRelDiff(got.RawMatrix().Data, want)
		t.Logf("t = %g: %.3g", tt, e)
		if e > 1e-6 {
			t.Errorf("t = %g: ε at one time off the per-row graph's by %.3g of its largest entry", tt, e)
		}
	}
}

// maxRelDiff is max |got − want| / max |want|.
func maxRelDiff(got []float64, want []float32) float64 {
	worst, scale := 0.0, 0.0
	for i, w := range want {
		worst = math.Max(worst, math.Abs(got[i]-float64(w)))
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	return worst / scale
}
