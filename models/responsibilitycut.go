package models

import (
	"math"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
)

// The mixture's Jacobian (jacobianBands) is a sum over components weighted
// by their responsibilities. Where a point's responsibility is
// concentrated (on MNIST at t ≲ 0.3, a few of the 400 components of the
// committed skip), the bands, the costly part, need only the components
// that carry it. A component k left out changes every entry of the
// Jacobian S by at most σ·b_k (cutWeights), so the components kept are a
// prefix of those in decreasing b_k, and the trace's error from the cut is
// bounded by the tail of b (cutBound). The trace takes the first prefix
// size (from cutTail's heuristic, in powers of two) whose bound is below
// cutTolerance of the trace, widening it until it is; where every
// component carries weight, that is all of them.

// cutTolerance is the error a responsibility cut may add to an exact
// trace, relative to the trace: below the rounding of the sum of d
// diagonal terms in the network's dtype.
func cutTolerance(dt dtypes.DType) float64 {
	if dt == dtypes.Float64 {
		return 1e-13
	}
	return 1e-7
}

// cutTail is the first prefix tried: the components carrying all but this
// fraction of Σ b_k. cutBound decides whether it is enough.
const cutTail = 1e-9

// minCut is the fewest components a cut keeps. A cut keeps a power of
// two of them from minCut on, or all K: its graphs are built for a few
// sizes, each once, and a point's cut keeps more components than its
// tail needs, never fewer.
const minCut = 8

// cutWeights is b_k [1, K] at a one-point batch: a bound on
// |[r_k(C_k⁻¹ − a_k a_kᵀ)]_ij|, the change of any entry of S/σ when
// component k is left out. With C_k⁻¹ = diag(v_k) + U_k diag(w_k) U_kᵀ
// (v_k the pixels' 1/c⊥ or 1/c_S, w = 1/c − 1/c⊥, U_k orthonormal),
// an entry of C_k⁻¹ is at most max|v| + max|w|, and with a_k = U_k(z∘w) +
// v∘D_k, ‖a_k‖ ≤ ‖z∘w‖ + max|v|·‖D_k‖ bounds a_k a_kᵀ's entries.
func (m *mixtureTerms) cutWeights() *graph.Node {
	w := graph.Sub(m.invC, graph.InsertAxes(m.invRest, -1)) // [1, K, r]
	maxW := graph.ReduceMax(graph.Abs(w), -1)
	v := graph.Max(m.invRest, m.invIdle)
	zw := graph.Sqrt(graph.ReduceSum(graph.Square(graph.Mul(m.z, w)), -1))
	dist := graph.Sqrt(graph.Max(m.dAll, graph.ZerosLike(m.dAll))) // ‖D_k‖; its expansion may round below 0
	a := graph.Add(zw, graph.Mul(v, dist))
	return graph.Mul(m.resp, graph.Add(graph.Add(maxW, v), graph.Square(a)))
}

// at is m restricted to the components sel [S] (int32): the terms
// jacobianBands reads, gathered. The basis's columns are gathered as
// slices of the stored [d, K·r] basis, never copied whole.
func (m *mixtureTerms) at(sel *graph.Node) *mixtureTerms {
	s, r, kk := sel.Shape().Dimensions[0], m.r, m.kk
	idx := graph.InsertAxes(sel, -1) // [S, 1]
	rows := func(v *graph.Node, dims ...int) *graph.Node {
		return graph.Gather(graph.Reshape(v, append([]int{kk}, dims...)...), idx)
	}
	c := *m
	// The K-sized terms jacobianBands does not read are left out, so that
	// a later use of them fails instead of mixing K and S components.
	c.blocks, c.has, c.dAll, c.dIdle, c.rest, c.c, c.lam, c.proj, c.norms = nil, nil, nil, nil, nil, nil, nil, nil, nil
	c.xMu, c.xIdleMu, c.cRest, c.cIdle, c.rho, c.nu, c.nRest, c.nIdle, c.idleMeans = nil, nil, nil, nil, nil, nil, nil, nil, nil
	c.kk = s
	start := graph.MulScalar(idx, r)
	cols := graph.GatherSlices(m.basis, []int{1}, start, []int{r}, false) // [S, d, r]
	c.basis = graph.Reshape(graph.TransposeAllAxes(cols, 1, 0, 2), m.d, s*r)
	c.resp = graph.Reshape(rows(m.resp), 1, s)
	c.invRest = graph.Reshape(rows(m.invRest), 1, s)
	c.invIdle = graph.Reshape(rows(m.invIdle), 1, s)
	c.invC = graph.Reshape(rows(m.invC, r), 1, s, r)
	c.z = graph.Reshape(rows(m.z, r), 1, s, r)
	c.means = rows(m.means, m.d)
	c.idle = rows(m.idle, m.d)
	return &c
}

// responsibilityCut is the components to keep of K with weights b: the
// order by decreasing b, and Σ b and the tail sums of that order.
type responsibilityCut struct {
	order []int32
	tail  []float64 // tail[s] = Σ b over order[s:]; tail[K] = 0
}

func newResponsibilityCut(b []float64) *responsibilityCut {
	kk := len(b)
	order := make([]int32, kk)
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		switch {
		case b[i] > b[j]:
			return -1
		case b[i] < b[j]:
			return 1
		}
		return 0
	})
	tail := make([]float64, kk+1)
	for s := kk - 1; s >= 0; s-- {
		tail[s] = tail[s+1] + math.Max(b[order[s]], 0)
	}
	return &responsibilityCut{order: order, tail: tail}
}

// first is the size tried first: the smallest cut size whose tail is at
// most cutTail of Σ b.
func (c *responsibilityCut) first() int {
	kk := len(c.order)
	s := min(minCut, kk)
	for s < kk && c.tail[s] > cutTail*c.tail[0] {
		s = c.wider(s)
	}
	return s
}

// wider is the next cut size after s: twice s, or all K.
func (c *responsibilityCut) wider(s int) int {
	return min(2*s, len(c.order))
}

// sel is the first s components of the order (all K, which the graph
// does not gather, when s = K).
func (c *responsibilityCut) sel(s int) []int32 { return c.order[:s] }

// cutBound bounds the change of tr ∂ε̂/∂x / σ (PatchTrace's output) when
// the mixture's Jacobian leaves out components of total weight tail: each
// entry of S moves by at most σ·tail, the trace reads d diagonal entries
// and the cross term (σ/α) Σ B_ij S_ji entries weighted by Σ|B_ij| = absB.
func cutBound(tail float64, d int, sigmaOverAlpha, absB float64) float64 {
	return tail * (float64(d) + sigmaOverAlpha*absB)
}
