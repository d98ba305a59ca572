package models

import (
	"fmt"
	"sync"

	"github.com/gomlx/compute/dtypes"
	gobackend "github.com/gomlx/compute/gobackend"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/internal/tensormat"
)

// InferenceCopyScope is the top-level scope of weights copied into a
// layout that evaluates faster: derived from a store's own variables when a
// graph first needs them, never trained, and never written to a checkpoint
// (IsInferenceCopy; checkpoint.Of leaves them out).
const InferenceCopyScope = "inference_copy"

// IsInferenceCopy reports whether v is a derived copy under
// InferenceCopyScope.
func IsInferenceCopy(v *model.Variable) bool { return HasScope(v.Scope(), InferenceCopyScope) }

// unpackedProductLimit is the number of multiply-adds below which the Go
// backend (compute v0.1.6, its noSIMDSmallMatMulSizeThreshold) multiplies
// with its row-at-a-time SIMD kernel, which reads the right operand in
// place. From this size on it packs both operands on every call: for the
// one-row product with the 40 MB basis of the MNIST skip that packing, not
// the arithmetic, was ≈ 10 of the skip's 12 ms (figures/bench/NOTES.md).
// Tests lower it to cut a small mixture into blocks.
var unpackedProductLimit = 4 << 20

// inferenceCopyMu serialises the creation of inference copies: two graphs
// of one store may be built at once.
var inferenceCopyMu sync.Mutex

// basisBlocks is the mixture skip's basis U [d, K·r] as blocks of Uᵀ, each
// [n·r, d] for a run of n whole components, small enough that a one-row
// product with a block stays under unpackedProductLimit: the one-row
// products z = x'U and w Uᵀ then run unpacked, block by block. Batches of
// more rows back-project through them too (backProject). It returns nil,
// and the caller takes the whole basis, unless the graph is an inference
// graph (a training graph's gradients are its parameters', none of them
// in the skip, so it would only pay for the copy), runs on the Go backend
// (whose String is its name), a one-row product with the whole basis is
// over the limit and the basis has a value to copy (a store whose shapes
// are being read has none). The blocks are made once per store from the
// basis's value, which never changes afterwards (SetMixtureSkip refuses a
// second mixture; a checkpoint loads into a new store).
func basisBlocks(scope *model.Scope, g *graph.Graph, d, kk, r int) []*graph.Node {
	if !fusedForInference(g) || g.Backend().String() != gobackend.BackendName || d*kk*r < unpackedProductLimit {
		return nil
	}
	per := max(1, (unpackedProductLimit-1)/(d*r)) // components a block
	basis := scope.At(MixtureScope).GetVariable("basis")
	if basis == nil || !basis.HasValue() {
		return nil
	}
	inferenceCopyMu.Lock()
	defer inferenceCopyMu.Unlock()
	store := scope.Store()
	name := func(i int) string { return fmt.Sprintf("/%s/mixture_basis_t/%d", InferenceCopyScope, i) }
	var out []*graph.Node
	for i, k0 := 0, 0; k0 < kk; i, k0 = i+1, k0+per {
		k1 := min(kk, k0+per)
		v := store.GetVariable(name(i))
		if v == nil {
			val, err := basis.Value()
			if err != nil {
				panic(err)
			}
			t, err := transposedColumns(val, k0*r, k1*r)
			if err != nil {
				panic(err)
			}
			v = derived(store, name(i), t)
		}
		out = append(out, v.NodeValue(g))
	}
	return out
}

// mixtureTables are the x-independent tables of the stored mixture that
// every evaluation reads: M∘μ' [K, d] (idle masks times centred means) and
// the rows ‖μ'_k‖² and ‖M_k∘μ'_k‖² = Σ_j M_kj μ'_kj² (the masks are 0 or 1,
// packSkip) [2, K]. From stored
// values they are inference copies, made once in float64 (the graph would
// redo ≈ 4·K·d element-wise operations on every call: ≈ 1.3 M for the MNIST
// skip); without values (a store whose shapes are being read) they are
// computed in the graph.
func mixtureTables(scope *model.Scope, g *graph.Graph, means, idle *graph.Node) (idleMeans, norms *graph.Node) {
	root := scope.At(MixtureScope)
	mv, iv := root.GetVariable("means"), root.GetVariable("idle")
	if mv == nil || iv == nil || !mv.HasValue() || !iv.HasValue() {
		idleMeans = graph.Mul(idle, means)
		row := func(n *graph.Node) *graph.Node { return graph.InsertAxes(graph.ReduceSum(n, -1), 0) }
		return idleMeans, graph.Concatenate([]*graph.Node{row(graph.Square(means)), row(graph.Square(idleMeans))}, 0)
	}
	inferenceCopyMu.Lock()
	defer inferenceCopyMu.Unlock()
	store := scope.Store()
	pm, pn := "/"+InferenceCopyScope+"/mixture_idle_means", "/"+InferenceCopyScope+"/mixture_norms"
	vm, vn := store.GetVariable(pm), store.GetVariable(pn)
	if vm == nil || vn == nil {
		mt, err := mv.Value()
		if err != nil {
			panic(err)
		}
		it, err := iv.Value()
		if err != nil {
			panic(err)
		}
		kk, d := mt.Shape().Dimensions[0], mt.Shape().Dimensions[1]
		mu, mask := tensormat.Copy(mt), tensormat.Copy(it)
		im, nrm := make([]float64, kk*d), make([]float64, 2*kk)
		for k := 0; k < kk; k++ {
			for j := k * d; j < (k+1)*d; j++ {
				im[j] = mask[j] * mu[j]
				nrm[k] += mu[j] * mu[j]
				nrm[kk+k] += im[j] * im[j]
			}
		}
		vm = derived(store, pm, tensormat.FromFlat(mt.DType(), im, kk, d))
		vn = derived(store, pn, tensormat.FromFlat(mt.DType(), nrm, 2, kk))
	}
	return vm.NodeValue(g), vn.NodeValue(g)
}

// derived creates the inference copy at path with value t.
func derived(store *model.Store, path string, t *tensors.Tensor) *model.Variable {
	v, err := store.CreateVariable(path, t)
	if err != nil {
		panic(err)
	}
	v.SetTrainable(false)
	return v
}

// transposedColumns is the transpose of columns [c0, c1) of the [d, n]
// matrix t, as a [c1−c0, d] tensor of t's dtype.
func transposedColumns(t *tensors.Tensor, c0, c1 int) (*tensors.Tensor, error) {
	dims := t.Shape().Dimensions
	if len(dims) != 2 || c0 < 0 || c1 > dims[1] || c0 >= c1 {
		return nil, fmt.Errorf("models: columns [%d, %d) of a %v basis", c0, c1, dims)
	}
	switch t.DType() {
	case dtypes.Float32:
		return transposeCols(tensors.MustCopyFlatData[float32](t), dims[0], dims[1], c0, c1), nil
	case dtypes.Float64:
		return transposeCols(tensors.MustCopyFlatData[float64](t), dims[0], dims[1], c0, c1), nil
	}
	return nil, fmt.Errorf("models: a %s basis", t.DType())
}

func transposeCols[T float32 | float64](flat []T, d, n, c0, c1 int) *tensors.Tensor {
	w := c1 - c0
	out := make([]T, w*d)
	for i := 0; i < d; i++ {
		row := flat[i*n+c0 : i*n+c1]
		for j, x := range row {
			out[j*d+i] = x
		}
	}
	return tensors.FromFlatDataAndDimensions(out, w, d)
}

// project is x'U [B, K·r], by blocks for one row; a batch takes the
// whole basis, whose product packs it with the backend's SIMD packer.
func (m *mixtureTerms) project(xc *graph.Node) *graph.Node {
	if m.blocks == nil || m.bsz > 1 {
		return graph.MatMul(xc, m.basis)
	}
	parts := make([]*graph.Node, len(m.blocks))
	for i, b := range m.blocks {
		parts[i] = graph.DotGeneral(xc, []int{1}, nil, b, []int{1}, nil)
	}
	return graph.Concatenate(parts, 1)
}

// backProjectBlocks is backProject with the basis in blocks: the sum of
// the products of w's column blocks with the blocks of Uᵀ.
func (m *mixtureTerms) backProjectBlocks(w *graph.Node) *graph.Node {
	var out *graph.Node
	c0 := 0
	for _, b := range m.blocks {
		c1 := c0 + b.Shape().Dimensions[0]
		p := graph.MatMul(graph.Slice(w, graph.AxisRange(), graph.AxisRange(c0, c1)), b)
		if out == nil {
			out = p
		} else {
			out = graph.Add(out, p)
		}
		c0 = c1
	}
	return out
}
