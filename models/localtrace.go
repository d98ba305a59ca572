package models

import (
	"context"
	"fmt"
	"math"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// PatchExactTrace is the exact Fisher trace tr(∂ε̂/∂x)/σ of an ε-network
// made of a mixture skip and a patch-network residual (ParamSkip =
// SkipMixture, ParamArch = ArchPatch), the same number as the d VJPs of
// access.VJPTrace, from the network's structure. With ε̂ = m(x) + r(x, y(x)),
// m the skip, y = (x − σm)/α its denoiser, S = ∂m/∂x, A = ∂r/∂x and
// B = ∂r/∂y,
//
//	tr ∂ε̂/∂x = tr S + tr A + tr B/α − (σ/α) Σᵢⱼ Bᵢⱼ Sⱼᵢ.
//
// S is the mixture's Jacobian in closed form, one [d, d] matrix per point
// (σ(Σₖ rₖ Cₖ⁻¹ − Σₖ rₖ aₖaₖᵀ + āāᵀ), aₖ = Cₖ⁻¹(x − αμₖ)); every output
// patch of r depends only on its own row of window features, so A and B,
// which are zero outside the windows, come from one forward pass of the
// patch head and one VJP per pixel of a patch (P², each that pixel of
// every patch at once) instead of one per pixel of the image; S is formed
// only where the trace reads it, from the components that carry the
// point's responsibility (responsibilitycut.go). n's Eps must be the store's
// ε-network (AccessNetwork, NewAccessNet): the trace is built from the
// store, not from n.Eps. It returns a nil estimator for any other network
// (the caller keeps access.VJPTrace). The registry's spec is "skip-exact"
// (SkipExact).
func PatchExactTrace(n *access.Net) (score.TraceEstimator, error) {
	if n == nil || n.Store == nil || !HasNetwork(n.Store, MixtureScope) {
		return nil, nil
	}
	net := n.Store.RootScope().At(ScoreScope)
	if model.GetParamOr(net, ParamSkip, SkipNone) != SkipMixture || model.GetParamOr(net, ParamArch, ArchMLP) != ArchPatch {
		return nil, nil
	}
	means := n.Store.RootScope().At(MixtureScope).GetVariable("means")
	if means == nil {
		return nil, nil
	}
	d := means.Shape().Dimensions[1]
	geom := patchGeometryOf(net, d)
	t := &PatchTrace{net: n, geom: geom, d: d}
	if err := t.layout(n); err != nil {
		return nil, err
	}
	var err error
	t.head, err = model.NewExec(n.Backend, n.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		return t.headGraph(scope, in[0], in[1], in[2])
	})
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	t.jacobian, err = model.NewExec(n.Backend, n.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		return t.jacobianGraph(scope, in[0], in[1], in[2], in[3])
	})
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return t, nil
}

// PatchTrace is PatchExactTrace's estimator (score.TraceEstimator).
type PatchTrace struct {
	net      *access.Net
	head     *model.Exec // headGraph
	jacobian *model.Exec // jacobianGraph
	geom     patchGeometry
	d        int
	nf       int   // window features of one channel of a patch
	out      []int // [P²·n]: the image pixel of pixel q of patch k, at q·n + k
	feat     []int // [n·nf]: the image pixel of window feature f of patch k, −1 beyond the border
}

// Name is the estimator's: its registered family, "skip-exact".
func (*PatchTrace) Name() string { return "skip-exact" }

// layout finds where the patch network's windows and outputs sit in the
// image, by running its own cut on pixel numbers.
func (t *PatchTrace) layout(n *access.Net) error {
	g, d, pp := t.geom, t.d, t.geom.p*t.geom.p
	np := g.grid * g.grid
	num, ids := mat.NewDense(1, d, nil), mat.NewDense(np, pp, nil) // pixel numbers (exact in float32)
	for j := range d {
		num.Set(0, j, float64(j+1))
	}
	for k := range np * pp {
		ids.Set(k/pp, k%pp, float64(k))
	}
	res, err := graph.ExecOnceN(n.Backend, func(img, rows *graph.Node) []*graph.Node {
		return []*graph.Node{windows(img, g.side, g.p, g.halo), unpatch(rows, g)}
	}, tensormat.FromMatrix(n.DType, num), tensormat.FromMatrix(n.DType, ids))
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	win, img := tensormat.Values(res[0]), tensormat.Values(res[1])
	t.nf = len(win) / np
	t.feat = make([]int, len(win))
	for i, v := range win {
		t.feat[i] = int(v) - 1
	}
	t.out = make([]int, np*pp)
	for j, v := range img {
		k, q := int(v)/pp, int(v)%pp
		t.out[q*np+k] = j
	}
	return nil
}

// headGraph is the graph of one point x [1, d] that does not depend on
// the mixture's cut: the gradients of pixel q of each patch's output with
// respect to that patch's window features, for q = 0 … P²−1 [P²·n, F]
// (row q·n + k; F = 2 nf: x's windows scaled by c_in, then y's), from one
// forward pass of the patch head and P² VJPs, and the mixture's
// cutWeights [1, K].
func (t *PatchTrace) headGraph(scope *model.Scope, x, alpha, sigma *graph.Node) []*graph.Node {
	in := Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)}
	m := mixtureTermsOf(scope, in)
	y := access.DenoiserFromEpsGraph(x, m.eps(), alpha, sigma)
	rows := patchRows(in, y, t.geom) // [n, F]
	out := patchOutputs(scope.At(ScoreScope), in, t.geom, rows, true)
	pp := t.geom.p * t.geom.p
	grads := make([]*graph.Node, pp)
	for q := range grads {
		pixel := graph.Slice(out, graph.AxisRange(), graph.AxisRange(q, q+1))
		grads[q] = graph.Gradient(graph.ReduceAllSum(pixel), rows)[0]
	}
	return []*graph.Node{graph.Concatenate(grads, 0), m.cutWeights()}
}

// jacobianGraph is the mixture's Jacobian S = ∂m/∂x at one point x [1, d]
// (jacobianBands' diagonal and bands), its component terms those of the
// components sel [S] (int32), or of all K when S = K
// (responsibilitycut.go).
func (t *PatchTrace) jacobianGraph(scope *model.Scope, x, alpha, sigma, sel *graph.Node) []*graph.Node {
	m := mixtureTermsOf(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)})
	abar := graph.Div(m.eps(), m.sigma)
	cut := m
	if sel.Shape().Dimensions[0] < m.kk {
		cut = m.at(sel)
	}
	diag, bands := cut.jacobianBands(t.geom.grid, t.geom.halo, abar)
	return append([]*graph.Node{diag}, bands...)
}

// Trace implements score.TraceEstimator.
func (t *PatchTrace) Trace(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	return t.TraceContext(context.Background(), c, x)
}

// TraceContext is Trace that stops between points with ctx's error once
// ctx is done.
func (t *PatchTrace) TraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	b, d := x.Dims()
	if d != t.d {
		return nil, fmt.Errorf("models: query dim %d, network dim %d", d, t.d)
	}
	out := make([]float64, b)
	for i := range b {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if out[i], _, err = t.traceAt(c, mat.NewDense(1, d, tensormat.Row(x, i))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// traceAt is the trace at one point x [1, d], with the mixture's Jacobian
// from the first components of the point's cut (responsibilitycut.go)
// whose error bound is below cutTolerance of the trace, and how many
// components that is. Only the Jacobian is recomputed when the cut widens.
func (t *PatchTrace) traceAt(c schedule.Coefficients, x *mat.Dense) (tr float64, kept int, err error) {
	p, err := t.point(c, x)
	if err != nil {
		return 0, 0, err
	}
	tol := cutTolerance(t.net.DType)
	for s := p.cut.first(); ; s = p.cut.wider(s) {
		tr, bound, err := t.traceWith(p, s)
		if err != nil || s == len(p.cut.order) || bound <= tol*math.Abs(tr) {
			return tr, s, err
		}
	}
}

// cutPoint is one point's inputs, the residual's feature gradients and
// the mixture's responsibility cut.
type cutPoint struct {
	c               schedule.Coefficients
	x, alpha, sigma *tensors.Tensor
	grad            []float64
	cut             *responsibilityCut
}

// point is x's inputs, feature gradients and cut (headGraph).
func (t *PatchTrace) point(c schedule.Coefficients, x *mat.Dense) (*cutPoint, error) {
	dt := t.net.DType
	p := &cutPoint{c: c, x: tensormat.FromMatrix(dt, x), alpha: tensormat.Filled(dt, 1, c.Alpha), sigma: tensormat.Filled(dt, 1, c.Sigma)}
	res, err := t.head.Exec(p.x, p.alpha, p.sigma)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	p.grad = tensormat.Values(res[0])
	p.cut = newResponsibilityCut(tensormat.Values(res[1]))
	return p, nil
}

// traceWith is the trace at p with the mixture's Jacobian from the first
// s components of its cut, and the bound on its change from the cut.
func (t *PatchTrace) traceWith(p *cutPoint, s int) (tr, bound float64, err error) {
	jac, err := t.jacobianWith(p, s)
	if err != nil {
		return 0, 0, err
	}
	c := p.c
	tr, absB := t.combine(c, jac, p.grad)
	return tr / c.Sigma, cutBound(p.cut.tail[s], t.d, c.Sigma/c.Alpha, absB), nil
}

// jacobianWith is the mixture's Jacobian S(j, i) (for pixels j and i
// within the halo's blocks of each other) from the first s components of
// p's cut.
func (t *PatchTrace) jacobianWith(p *cutPoint, s int) (func(j, i int) float64, error) {
	res, err := t.jacobian.Exec(p.x, p.alpha, p.sigma, tensors.FromValue(p.cut.sel(s)))
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	bands := make([][]float64, len(res)-1)
	for k := range bands {
		bands[k] = tensormat.Values(res[1+k])
	}
	return jacobianOf(tensormat.Values(res[0]), bands, t.d/t.geom.grid), nil
}

// combine is tr ∂ε̂/∂x from S and the feature gradients G [P²·n, F], and
// the sum of |B_ij| over the entries of S its cross term reads.
func (t *PatchTrace) combine(c schedule.Coefficients, s func(j, i int) float64, grad []float64) (tr, absB float64) {
	d, nf := t.d, t.nf
	np := t.geom.grid * t.geom.grid
	cIn := 1 / math.Hypot(c.Alpha, c.Sigma)
	for i := range d {
		tr += s(i, i)
	}
	for row, i := range t.out { // output pixel i: pixel q of patch k, row = q·n + k
		k := row % np
		g := grad[row*2*nf : (row+1)*2*nf]
		cross := 0.0
		for f, j := range t.feat[k*nf : (k+1)*nf] {
			if j < 0 {
				continue
			}
			if j == i {
				tr += cIn*g[f] + g[nf+f]/c.Alpha
			}
			cross += g[nf+f] * s(j, i)
			absB += math.Abs(g[nf+f])
		}
		tr -= c.Sigma / c.Alpha * cross
	}
	return tr, absB
}

// jacobianOf reads S(j, i) from jacobianBands' outputs: the diagonal
// part [d] and, for offsets δ = 0 … H, the products of the rows' blocks
// of n pixels (one patch row each) [grid + H, n, n], block b pairing rows
// of block b with columns of block b − δ; S is symmetric, so the blocks
// below the diagonal are those above, transposed.
func jacobianOf(diag []float64, bands [][]float64, n int) func(j, i int) float64 {
	return func(j, i int) float64 {
		v := 0.0
		if j == i {
			v = diag[i]
		}
		bj, bi := j/n, i/n
		if bj < bi { // S(j, i) = S(i, j)
			bj, bi, j, i = bi, bj, i, j
		}
		return v + bands[bj-bi][(bj*n+j%n)*n+i%n]
	}
}

// jacobianBands is ∂ε_mix/∂x at a batch of one point,
// σ(Σₖ rₖ Cₖ⁻¹ − Σₖ rₖ aₖaₖᵀ + āāᵀ) with aₖ = Cₖ⁻¹Dₖ and ā = Σₖ rₖ aₖ
// (the responsibilities' own derivatives give the outer products), each
// Cₖ⁻¹ split as in eps: Uₖ diag(1/cₖ − 1/c⊥ₖ) Uₖᵀ + I/c⊥ₖ +
// (1/c_S,k − 1/c⊥ₖ) diag(Mₖ). It is formed only where the trace reads it:
// diag [1, d] is the diagonal terms, and bands[δ] [blocks + halo, n, n]
// the rest on the blocks of rows within halo blocks of each other (the d
// rows cut into blocks equal ones), block b pairing rows of block b with
// columns of block b − δ. Each band is a product of two [d, c] factors
// (bandProducts): the low-rank part σU diag(q) Uᵀ over c = K·r, the
// costly one, and the outer products over K and 1. abar is ā [1, d] =
// ε_mix/σ, the whole mixture's also when m holds some of its components
// (at).
func (m *mixtureTerms) jacobianBands(blocks, halo int, abar *graph.Node) (diag *graph.Node, bands []*graph.Node) {
	kk, r, d := m.kk, m.r, m.d
	if m.bsz != 1 {
		panic(fmt.Sprintf("models: the mixture's Jacobian of a batch of %d points (one at a time)", m.bsz))
	}
	col := func(v *graph.Node) *graph.Node { return graph.Reshape(v, kk, 1) } // [1, K] → [K, 1]
	w := graph.Sub(m.invC, graph.InsertAxes(m.invRest, -1))                   // 1/c − 1/c⊥ [1, K, r]
	q := graph.Mul(graph.Reshape(graph.Mul(w, graph.InsertAxes(m.resp, -1)), 1, kk*r), m.sigma)
	idle := graph.Sub(m.invIdle, m.invRest) // [1, K]
	diag = graph.Add(graph.ReduceAndKeep(graph.Mul(m.resp, m.invRest), graph.ReduceSum, -1), graph.MatMul(graph.Mul(m.resp, idle), m.idle))
	dk := graph.Sub(m.xc, graph.Mul(m.alpha, m.means)) // Dₖ [K, d]
	// Uₖ(zₖ ∘ wₖ) for every k, the basis scaled before the reshape (a
	// reshape of the stored basis would copy it).
	low := graph.ReduceSum(graph.Reshape(graph.Mul(m.basis, graph.Reshape(graph.Mul(m.z, w), 1, kk*r)), d, kk, r), -1)
	aT := graph.Add(low, graph.Transpose(graph.Mul(graph.Add(col(m.invRest), graph.Mul(col(idle), m.idle)), dk), 0, 1)) // aₖ as columns [d, K]
	abarT := graph.Reshape(abar, d, 1)
	lowRank := bandProducts(graph.Mul(m.basis, q), m.basis, blocks, halo)
	spread := bandProducts(graph.Mul(aT, graph.MulScalar(graph.Mul(m.resp, m.sigma), -1)), aT, blocks, halo) // −σ Σ rₖ aₖaₖᵀ
	outer := bandProducts(graph.Mul(abarT, m.sigma), abarT, blocks, halo)                                    // σ āāᵀ
	for k := range lowRank {
		bands = append(bands, graph.Add(lowRank[k], graph.Add(spread[k], outer[k])))
	}
	return graph.Mul(diag, m.sigma), bands
}

// bandProducts is, for δ = 0 … H (H = min(halo, blocks − 1)), the
// products of the row blocks of left and right [d, c] (d rows cut into
// blocks of n): band δ [blocks + H, n, n] holds block b of left times
// block b − δ of right, transposed, and zeros where b − δ or b is beyond
// the ends. The shifts are zero blocks concatenated before and after
// (contiguous copies; the backend slices element by element).
func bandProducts(left, right *graph.Node, blocks, halo int) []*graph.Node {
	d, c := left.Shape().Dimensions[0], left.Shape().Dimensions[1]
	n, h := d/blocks, min(halo, blocks-1)
	pad := func(x *graph.Node, before int) *graph.Node {
		zeros := func(k int) *graph.Node { return graph.Zeros(x.Graph(), shapes.Make(x.DType(), k*n, c)) }
		parts := []*graph.Node{x}
		if before > 0 {
			parts = append([]*graph.Node{zeros(before)}, parts...)
		}
		if h-before > 0 {
			parts = append(parts, zeros(h-before))
		}
		return graph.Reshape(graph.Concatenate(parts, 0), blocks+h, n, c)
	}
	l := pad(left, 0)
	out := make([]*graph.Node, h+1)
	for delta := range out {
		out[delta] = graph.DotGeneral(l, []int{2}, []int{0}, pad(right, delta), []int{2}, []int{0})
	}
	return out
}
