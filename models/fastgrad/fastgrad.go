// Package fastgrad replaces GoMLX's registered vector-Jacobian products (VJPs)
// of the matrix-product node types, Dot and DotGeneral, with VJPs that are
// themselves matrix products.
//
// GoMLX v0.26.0 back-propagates through out = lhs·rhs by broadcasting the
// adjoint to a [batch, in, out] tensor, multiplying and reducing. On the
// pure-Go backend that costs ≈ 10–20× the forward pass of a dense network
// (NOTES.md). The transpose rule of a contraction is another contraction:
//
//	out = lhs·rhs  ⇒  ∂L/∂lhs = v·rhsᵀ,  ∂L/∂rhs = lhsᵀ·v
//
// and, for DotGeneral with batch axes b, contracting axes c and free (cross)
// axes, ∂L/∂lhs = DotGeneral(v, rhs) contracting v's rhs-cross axes with rhs's
// cross axes (batch on batch), followed by a transpose back to lhs's layout.
//
// Importing this package (even as `_ "github.com/dfx-lab/dfx/models/fastgrad"`)
// installs the VJPs in graph.VJPRegistration from its init function; every
// graph.Gradient built afterwards, on any backend, uses them. The dfx/models
// and dfx/access packages import it.
//
// DotGeneral's axes are not exported by GoMLX v0.26.0; they are read back from
// the node's description (Node.String), which prints them. If that text ever
// fails to parse or disagrees with the shapes, the original VJP is used, so a
// GoMLX upgrade can only make gradients slower, never wrong.
package fastgrad

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The VJPs GoMLX registered before this package replaced them.
var (
	originalDot        = graph.VJPRegistration[graph.NodeTypeDot]
	originalDotGeneral = graph.VJPRegistration[graph.NodeTypeDotGeneral]
	mu                 sync.Mutex
	installed          bool
)

func init() { Install() }

// Install registers the matrix-product VJPs for Dot and DotGeneral. It is
// called by init; calling it again is harmless. Like any change to
// graph.VJPRegistration it must not run while another goroutine builds a
// gradient graph.
func Install() {
	mu.Lock()
	defer mu.Unlock()
	graph.VJPRegistration[graph.NodeTypeDot] = single(DotVJP)
	graph.VJPRegistration[graph.NodeTypeDotGeneral] = single(DotGeneralVJP)
	installed = true
}

// Uninstall restores GoMLX's original VJPs, for comparisons and benchmarks.
// Same concurrency caveat as Install.
func Uninstall() {
	mu.Lock()
	defer mu.Unlock()
	graph.VJPRegistration[graph.NodeTypeDot] = originalDot
	graph.VJPRegistration[graph.NodeTypeDotGeneral] = originalDotGeneral
	installed = false
}

// Installed reports whether the fast VJPs are the registered ones.
func Installed() bool {
	mu.Lock()
	defer mu.Unlock()
	return installed
}

func single(fn func(node, v *graph.Node) []*graph.Node) graph.VJP {
	vjp := graph.VJP(func(node *graph.Node, vjpOutputs []*graph.Node, _ shapes.Shape) []*graph.Node {
		return fn(node, vjpOutputs[0])
	})
	return vjp
}

// DotVJP is the VJP of graph.Dot for adjoint v of its output: for
// [i,j]·[j,k] it returns v·rhsᵀ and lhsᵀ·v, computed as DotGeneral
// contractions without materialising transposes or [i,j,k] products.
func DotVJP(node, v *graph.Node) []*graph.Node {
	in := node.Inputs()
	lhs, rhs := in[0], in[1]
	switch {
	case lhs.Rank() == 1 && rhs.Rank() == 1: // scalar = ⟨lhs, rhs⟩
		return []*graph.Node{graph.Mul(v, rhs), graph.Mul(v, lhs)}
	case lhs.Rank() == 2 && rhs.Rank() == 1: // [i] = [i,j]·[j]
		return []*graph.Node{
			graph.Mul(graph.InsertAxes(v, -1), graph.InsertAxes(rhs, 0)),
			graph.DotGeneral(lhs, []int{0}, nil, v, []int{0}, nil),
		}
	case lhs.Rank() == 2 && rhs.Rank() == 2: // [i,k] = [i,j]·[j,k]
		return []*graph.Node{
			graph.DotGeneral(v, []int{1}, nil, rhs, []int{1}, nil),
			graph.DotGeneral(lhs, []int{0}, nil, v, []int{0}, nil),
		}
	}
	return originalDot(node, []*graph.Node{v}, shapes.Shape{})
}

// DotGeneralAxes are the contracting and batch axes of a DotGeneral node.
type DotGeneralAxes struct {
	LhsContracting, LhsBatch, RhsContracting, RhsBatch []int
}

var dotGeneralText = regexp.MustCompile(`DotGeneral\(lhs=\[#\d+\], lhsContractingAxes=\[([\d ]*)\], lhsBatchAxes=\[([\d ]*)\], rhs=\[#\d+\], rhsContractingAxes=\[([\d ]*)\], rhsBatchAxes=\[([\d ]*)\]\)`)

// AxesOf reads a DotGeneral node's axes back from its description and checks
// them against the input and output shapes; ok is false if that fails.
func AxesOf(node *graph.Node) (axes DotGeneralAxes, ok bool) {
	if node.Type() != graph.NodeTypeDotGeneral || len(node.Inputs()) != 2 {
		return axes, false
	}
	m := dotGeneralText.FindAllStringSubmatch(node.String(), -1)
	if len(m) == 0 {
		return axes, false
	}
	last := m[len(m)-1]
	lists := make([][]int, 4)
	for i := range lists {
		for _, f := range strings.Fields(last[i+1]) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return axes, false
			}
			lists[i] = append(lists[i], n)
		}
	}
	axes = DotGeneralAxes{lists[0], lists[1], lists[2], lists[3]}
	return axes, axes.consistent(node)
}

// consistent checks the axes against the shapes: valid, disjoint axes, equal
// contracted and batch dimensions, and the output shape they imply.
func (a DotGeneralAxes) consistent(node *graph.Node) bool {
	lhs, rhs := node.Inputs()[0].Shape(), node.Inputs()[1].Shape()
	if len(a.LhsContracting) != len(a.RhsContracting) || len(a.LhsBatch) != len(a.RhsBatch) {
		return false
	}
	if !validAxes(lhs.Rank(), a.LhsContracting, a.LhsBatch) || !validAxes(rhs.Rank(), a.RhsContracting, a.RhsBatch) {
		return false
	}
	want := []int{}
	for i := range a.LhsBatch {
		if lhs.Dimensions[a.LhsBatch[i]] != rhs.Dimensions[a.RhsBatch[i]] {
			return false
		}
		want = append(want, lhs.Dimensions[a.LhsBatch[i]])
	}
	for i := range a.LhsContracting {
		if lhs.Dimensions[a.LhsContracting[i]] != rhs.Dimensions[a.RhsContracting[i]] {
			return false
		}
	}
	for _, ax := range freeAxes(lhs.Rank(), a.LhsContracting, a.LhsBatch) {
		want = append(want, lhs.Dimensions[ax])
	}
	for _, ax := range freeAxes(rhs.Rank(), a.RhsContracting, a.RhsBatch) {
		want = append(want, rhs.Dimensions[ax])
	}
	return slices.Equal(want, node.Shape().Dimensions)
}

func validAxes(rank int, lists ...[]int) bool {
	seen := make([]bool, rank)
	for _, l := range lists {
		for _, ax := range l {
			if ax < 0 || ax >= rank || seen[ax] {
				return false
			}
			seen[ax] = true
		}
	}
	return true
}

// freeAxes are the axes in neither list, ascending (DotGeneral's output order).
func freeAxes(rank int, contracting, batch []int) []int {
	var free []int
	for ax := range rank {
		if !slices.Contains(contracting, ax) && !slices.Contains(batch, ax) {
			free = append(free, ax)
		}
	}
	return free
}

// DotGeneralVJP is the VJP of graph.DotGeneral as two DotGeneral
// contractions of the adjoint v with the other operand, each followed by a
// transpose into the operand's layout.
func DotGeneralVJP(node, v *graph.Node) []*graph.Node {
	a, ok := AxesOf(node)
	if !ok {
		return originalDotGeneral(node, []*graph.Node{v}, shapes.Shape{})
	}
	lhs, rhs := node.Inputs()[0], node.Inputs()[1]
	lhsFree := freeAxes(lhs.Rank(), a.LhsContracting, a.LhsBatch)
	rhsFree := freeAxes(rhs.Rank(), a.RhsContracting, a.RhsBatch)
	nb, nl, nr := len(a.LhsBatch), len(lhsFree), len(rhsFree)
	vBatch := iota(0, nb)
	vLhs, vRhs := iota(nb, nl), iota(nb+nl, nr)

	// ∂/∂lhs: contract v's rhs-free axes with rhs's free axes → [b…, lhsFree…, rhsContracting (ascending)…].
	gl := graph.DotGeneral(v, vRhs, vBatch, rhs, rhsFree, a.RhsBatch)
	gl = toLayout(gl, lhs.Rank(), a.LhsBatch, lhsFree, a.LhsContracting, a.RhsContracting)
	// ∂/∂rhs: contract lhs's free axes with v's lhs-free axes → [b…, lhsContracting (ascending)…, rhsFree…].
	gr := graph.DotGeneral(lhs, lhsFree, a.LhsBatch, v, vLhs, vBatch)
	gr = toLayoutRhs(gr, rhs.Rank(), a.RhsBatch, a.RhsContracting, a.LhsContracting, rhsFree)
	return []*graph.Node{gl, gr}
}

// toLayout permutes [b…, free…, c…] (c ordered like the other operand's
// ascending contracting axes) into the layout of an operand whose batch, free
// and contracting axes are given; otherContracting pairs with contracting.
func toLayout(x *graph.Node, rank int, batch, free, contracting, otherContracting []int) *graph.Node {
	perm := make([]int, rank)
	for i, ax := range batch {
		perm[ax] = i
	}
	for i, ax := range free {
		perm[ax] = len(batch) + i
	}
	sorted := slices.Sorted(slices.Values(otherContracting))
	for k, ax := range contracting {
		perm[ax] = len(batch) + len(free) + slices.Index(sorted, otherContracting[k])
	}
	return transposeIfNeeded(x, perm)
}

// toLayoutRhs is toLayout for the rhs operand, whose gradient comes out as
// [b…, c…, free…].
func toLayoutRhs(x *graph.Node, rank int, batch, contracting, otherContracting, free []int) *graph.Node {
	perm := make([]int, rank)
	for i, ax := range batch {
		perm[ax] = i
	}
	sorted := slices.Sorted(slices.Values(otherContracting))
	for k, ax := range contracting {
		perm[ax] = len(batch) + slices.Index(sorted, otherContracting[k])
	}
	for i, ax := range free {
		perm[ax] = len(batch) + len(contracting) + i
	}
	return transposeIfNeeded(x, perm)
}

func transposeIfNeeded(x *graph.Node, perm []int) *graph.Node {
	for i, p := range perm {
		if i != p {
			return graph.TransposeAllAxes(x, perm...)
		}
	}
	return x
}

func iota(start, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = start + i
	}
	return s
}
