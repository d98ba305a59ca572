package fastgrad

import (
	"math"
	"math/rand/v2"
	"testing"

	_ "github.com/gomlx/gomlx/backends/simplego"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// product is a matrix-product form whose gradients are checked.
type product struct {
	name       string
	lhs, rhs   []int
	build      func(lhs, rhs *graph.Node) *graph.Node
	wantsDotGe bool // the form must produce a DotGeneral node (parsed axes)
}

func dg(lc, lb, rc, rb []int) func(l, r *graph.Node) *graph.Node {
	return func(l, r *graph.Node) *graph.Node { return graph.DotGeneral(l, lc, lb, r, rc, rb) }
}

// products lists every axis layout the networks use (Dot [B,in]·[in,out],
// Dot matrix·vector, MatMul/Einsum dense layers) plus general DotGeneral
// layouts with several batch and contracting axes in unusual positions.
var products = []product{
	{"Dot vec·vec", []int{5}, []int{5}, graph.Dot, false},
	{"Dot mat·vec", []int{4, 5}, []int{5}, graph.Dot, false},
	{"Dot mat·mat", []int{4, 5}, []int{5, 3}, graph.Dot, false},
	{"MatMul rank3·rank2", []int{2, 4, 5}, []int{5, 3}, graph.MatMul, true},
	{"Einsum dense bi,io->bo", []int{4, 5}, []int{5, 3}, func(l, r *graph.Node) *graph.Node { return graph.Einsum("bi,io->bo", l, r) }, true},
	{"DotGeneral x·Wᵀ", []int{4, 5}, []int{3, 5}, dg([]int{1}, nil, []int{1}, nil), true},
	{"DotGeneral batched matmul", []int{2, 4, 5}, []int{2, 5, 3}, dg([]int{2}, []int{0}, []int{1}, []int{0}), true},
	{"DotGeneral scrambled axes", []int{5, 2, 4, 6}, []int{3, 6, 2, 5}, dg([]int{3, 0}, []int{1}, []int{1, 3}, []int{2}), true},
	{"DotGeneral outer product", []int{2, 3}, []int{4}, dg(nil, nil, nil, nil), true},
	{"DotGeneral full contraction", []int{3, 4}, []int{4, 3}, dg([]int{0, 1}, nil, []int{1, 0}, nil), true},
}

func randomTensor(rng *rand.Rand, dims []int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}

// gradients returns ∂⟨w, f(lhs, rhs)⟩/∂lhs and /∂rhs with the currently registered VJPs.
func gradients(t *testing.T, b backends.Backend, p product, lhs, rhs *tensors.Tensor, seed uint64) ([]float64, []float64, float64) {
	t.Helper()
	outs := graph.MustExecOnceN(b, func(l, r *graph.Node) []*graph.Node {
		out := p.build(l, r)
		// A fixed, non-symmetric weight w so that ⟨w, out⟩ exercises every output entry.
		g := l.Graph()
		w := graph.Scalar(g, out.DType(), 0.7)
		if out.Rank() > 0 {
			n := out.Shape().Size()
			w = graph.Sin(graph.AddScalar(graph.Iota(g, shapes.Make(out.DType(), n), 0), float64(seed)))
			w = graph.Reshape(w, out.Shape().Dimensions...)
		}
		loss := graph.ReduceAllSum(graph.Mul(w, out))
		gr := graph.Gradient(loss, l, r)
		return []*graph.Node{gr[0], gr[1], loss}
	}, lhs, rhs)
	return tensors.MustCopyFlatData[float64](outs[0]), tensors.MustCopyFlatData[float64](outs[1]), outs[2].Value().(float64)
}

func maxAbsDiff(a, b []float64) float64 {
	m := 0.0
	for i := range a {
		m = max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func TestFastVJPsEqualGoMLXOriginalsForEveryLayout(t *testing.T) {
	b := backends.MustNew()
	rng := rand.New(rand.NewPCG(1, 2))
	defer Install()
	for _, p := range products {
		lhs, rhs := randomTensor(rng, p.lhs), randomTensor(rng, p.rhs)
		Install()
		fl, fr, _ := gradients(t, b, p, lhs, rhs, 3)
		Uninstall()
		ol, or, _ := gradients(t, b, p, lhs, rhs, 3)
		if d := max(maxAbsDiff(fl, ol), maxAbsDiff(fr, or)); d > 1e-12 || len(fl) != len(ol) || len(fr) != len(or) {
			t.Errorf("%s: fast and original VJPs differ by %g", p.name, d)
		}
	}
}

func TestFastVJPsMatchFiniteDifferences(t *testing.T) {
	b := backends.MustNew()
	rng := rand.New(rand.NewPCG(3, 4))
	Install()
	const h = 1e-6
	for _, p := range products {
		lhs, rhs := randomTensor(rng, p.lhs), randomTensor(rng, p.rhs)
		gl, gr, _ := gradients(t, b, p, lhs, rhs, 5)
		for side, grad := range [][]float64{gl, gr} {
			x := []*tensors.Tensor{lhs, rhs}[side]
			flat := tensors.MustCopyFlatData[float64](x)
			for i := range flat {
				plus, minus := append([]float64(nil), flat...), append([]float64(nil), flat...)
				plus[i] += h
				minus[i] -= h
				args := [2][]*tensors.Tensor{{lhs, rhs}, {lhs, rhs}}
				args[0][side] = tensors.FromFlatDataAndDimensions(plus, x.Shape().Dimensions...)
				args[1][side] = tensors.FromFlatDataAndDimensions(minus, x.Shape().Dimensions...)
				_, _, lp := gradients(t, b, p, args[0][0], args[0][1], 5)
				_, _, lm := gradients(t, b, p, args[1][0], args[1][1], 5)
				if fd := (lp - lm) / (2 * h); math.Abs(fd-grad[i]) > 1e-6*(1+math.Abs(fd)) {
					t.Fatalf("%s operand %d element %d: VJP %g, finite difference %g", p.name, side, i, grad[i], fd)
				}
			}
		}
	}
}

func TestDotGeneralAxesAreReadBackFromTheNode(t *testing.T) {
	b := backends.MustNew()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, p := range products {
		if !p.wantsDotGe {
			continue
		}
		var ok bool
		graph.MustExecOnce(b, func(l, r *graph.Node) *graph.Node {
			out := p.build(l, r)
			for out.Type() != graph.NodeTypeDotGeneral && len(out.Inputs()) == 1 {
				out = out.Inputs()[0] // Einsum/MatMul may end with a transpose or reshape.
			}
			_, ok = AxesOf(out)
			return out
		}, randomTensor(rng, p.lhs), randomTensor(rng, p.rhs))
		if !ok {
			t.Errorf("%s: DotGeneral axes not recovered from the node description", p.name)
		}
	}
}
