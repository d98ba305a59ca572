package models

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// usedTypes counts the node types the given outputs depend on.
func usedTypes(outs []*graph.Node) map[string]int {
	seen := map[*graph.Node]bool{}
	counts := map[string]int{}
	var walk func(n *graph.Node)
	walk = func(n *graph.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		counts[n.Type().String()]++
		for _, in := range n.Inputs() {
			walk(in)
		}
	}
	for _, o := range outs {
		walk(o)
	}
	return counts
}

// The gradient of a network in the [out, in] layout needs no Transpose: the
// identity transposes GoMLX's DotGeneral VJP emits are elided (vjp.go). A
// square weight in the legacy [in, out] layout still gets its real
// transpose, and the gradients of both layouts equal the closed form
// ∂ Σ(xW)²/∂W = 2 xᵀ(xW).
func TestDenseGradientsNeedNoIdentityTranspose(t *testing.T) {
	x := [][]float64{{1, 2, 3}, {-1, 0.5, 2}}
	w := [][]float64{{0.1, -0.2, 0.3}, {0.4, 0.5, -0.6}, {0.7, 0.8, 0.9}}  // [in, out], square
	wt := [][]float64{{0.1, 0.4, 0.7}, {-0.2, 0.5, 0.8}, {0.3, -0.6, 0.9}} // [out, in]
	// Closed form: y = xW, dW = 2 xᵀ y (in [in, out]).
	y := make([][]float64, 2)
	for b := range y {
		y[b] = make([]float64, 3)
		for j := range 3 {
			for i := range 3 {
				y[b][j] += x[b][i] * w[i][j]
			}
		}
	}
	want := make([][]float64, 3)
	for i := range want {
		want[i] = make([]float64, 3)
		for j := range 3 {
			for b := range 2 {
				want[i][j] += 2 * x[b][i] * y[b][j]
			}
		}
	}
	for _, transposed := range []bool{false, true} {
		var types map[string]int
		e := graph.MustNewExec(MustNewBackend(), func(xn, wn *graph.Node) *graph.Node {
			var out *graph.Node
			if transposed {
				out = graph.DotGeneral(xn, []int{1}, nil, wn, []int{1}, nil)
			} else {
				out = graph.MatMul(xn, wn)
			}
			g := graph.Gradient(graph.ReduceAllSum(graph.Square(out)), wn)[0]
			types = usedTypes([]*graph.Node{g})
			return g
		})
		wArg := w
		if transposed {
			wArg = wt
		}
		got := tensors.MustCopyFlatData[float64](e.MustExec(x, wArg)[0])
		for i := range 3 {
			for j := range 3 {
				g := got[i*3+j]
				if transposed {
					g = got[j*3+i] // [out, in]
				}
				if math.Abs(g-want[i][j]) > 1e-12 {
					t.Fatalf("transposed=%v: dW[%d][%d] = %g, want %g", transposed, i, j, g, want[i][j])
				}
			}
		}
		if transposed && types["Transpose"] != 0 {
			t.Errorf("[out, in] gradient uses %d Transpose nodes, want 0", types["Transpose"])
		}
		if !transposed && types["Transpose"] != 1 {
			t.Errorf("[in, out] gradient uses %d Transpose nodes, want 1 (the real one)", types["Transpose"])
		}
	}
	// And a whole residual MLP built by Dense in the default layout.
	store := NewStore()
	store.SetParams(map[string]any{ParamWidth: 8, ParamDepth: 2})
	var types map[string]int
	e := model.MustNewExec(MustNewBackend(), store, func(scope *model.Scope, xn, a, s *graph.Node) []*graph.Node {
		eps := Eps(scope, Inputs{X: xn, Alpha: a, Sigma: s})
		grads := scope.BuildTrainableVariablesGradientsGraph(graph.ReduceAllSum(graph.Square(eps)))
		types = usedTypes(grads)
		return grads
	})
	e.MustExec([][]float32{{1, 2, 3}, {0, 1, 0}}, []float32{0.5, 0.5}, []float32{0.8, 0.8})
	if types["Transpose"] != 0 || types["DotGeneral"] == 0 {
		t.Errorf("network gradient uses %d Transpose and %d DotGeneral nodes, want 0 and > 0", types["Transpose"], types["DotGeneral"])
	}
}
