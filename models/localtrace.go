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
// which are zero outside the windows, come from one VJP per pixel of a
// patch (P² rows, each a pixel's cotangent in every patch at once)
// instead of one per pixel of the image. n's Eps must be the store's
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
	t.exec, err = model.NewExec(n.Backend, n.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		return t.parts(scope, in[0], in[1], in[2], in[3], in[4])
	})
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	t.weights, err = model.NewExec(n.Backend, n.Store, func(scope *model.Scope, in []*graph.Node) *graph.Node {
		x, alpha, sigma := in[0], in[1], in[2]
		return mixtureTermsOf(scope, Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)}).cutWeights()
	})
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return t, nil
}

// PatchTrace is PatchExactTrace's estimator (score.TraceEstimator).
type PatchTrace struct {
	net     *access.Net
	exec    *model.Exec // parts
	weights *model.Exec // the mixture's cutWeights at a point
	geom    patchGeometry
	d       int
	nf      int        // window features of one channel of a patch
	out     []int      // [P²·n]: the image pixel of pixel q of patch k, at q·n + k
	feat    []int      // [n·nf]: the image pixel of window feature f of patch k, −1 beyond the border
	cotan   *mat.Dense // [P², d]
}

// Name is the estimator's: its registered family, "skip-exact".
func (*PatchTrace) Name() string { return "skip-exact" }

// layout finds where the patch network's windows and outputs sit in the
// image, by running its own cut on pixel numbers, and builds the
// cotangents: row q is 1 at pixel q of every patch.
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
	t.cotan = mat.NewDense(pp, d, nil)
	for j, v := range img {
		k, q := int(v)/pp, int(v)%pp
		t.out[q*np+k] = j
		t.cotan.Set(q, j, 1)
	}
	return nil
}

// parts is the graph of one point x [1, d]: S = ∂m/∂x [d, d] and the
// gradients of ⟨cotangent q, r⟩ with respect to each patch's window
// features [P²·n, F], F = 2 nf (x's windows scaled by c_in, then y's).
// S's component terms are those of the components sel [S] (int32), or of
// all K when S = K (responsibilitycut.go).
func (t *PatchTrace) parts(scope *model.Scope, x, alpha, sigma, cot, sel *graph.Node) []*graph.Node {
	in := Inputs{X: x, Alpha: alpha, Sigma: sigma, Class: nullClass(scope, x)}
	m := mixtureTermsOf(scope, in)
	eps := m.eps()
	y := access.DenoiserFromEpsGraph(x, eps, alpha, sigma)
	rows := patchRows(in, y, t.geom) // [n, F]
	q, np, f := cot.Shape().Dimensions[0], rows.Shape().Dimensions[0], rows.Shape().Dimensions[1]
	tiled := graph.Reshape(graph.BroadcastToDims(graph.InsertAxes(rows, 0), q, np, f), q*np, f)
	inQ := Inputs{X: cot, Alpha: graph.BroadcastToDims(alpha, q), Sigma: graph.BroadcastToDims(sigma, q), Class: nullClass(scope, cot)}
	r := patchHead(scope.At(ScoreScope), inQ, t.geom, tiled, true)
	grad := graph.Gradient(graph.ReduceAllSum(graph.Mul(r, cot)), tiled)[0]
	cut := m
	if sel.Shape().Dimensions[0] < m.kk {
		cut = m.at(sel)
	}
	rest, bands := cut.jacobianBands(t.geom.grid, t.geom.halo, graph.Div(eps, m.sigma))
	return append([]*graph.Node{grad, rest}, bands...)
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
		if out[i], err = t.traceAt(c, mat.NewDense(1, d, tensormat.Row(x, i))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// traceAt is the trace at one point x [1, d]: with the mixture's
// Jacobian from the fewest components whose cut (responsibilitycut.go)
// keeps its error bound below cutTolerance of the trace.
func (t *PatchTrace) traceAt(c schedule.Coefficients, x *mat.Dense) (float64, error) {
	p, err := t.point(c, x)
	if err != nil {
		return 0, err
	}
	for s := p.cut.first(); ; s = p.cut.wider(s) {
		tr, bound, err := t.traceWith(p, s)
		if err != nil || s == len(p.cut.order) || bound <= cutTolerance*math.Abs(tr) {
			return tr, err
		}
	}
}

// cutPoint is one point's inputs and its responsibility cut.
type cutPoint struct {
	c         schedule.Coefficients
	x, alpha  *tensors.Tensor
	sigma     *tensors.Tensor
	cotangent *tensors.Tensor
	cut       *responsibilityCut
}

// point is x's inputs and cut.
func (t *PatchTrace) point(c schedule.Coefficients, x *mat.Dense) (*cutPoint, error) {
	dt := t.net.DType
	p := &cutPoint{c: c, x: tensormat.FromMatrix(dt, x), alpha: tensormat.Filled(dt, 1, c.Alpha),
		sigma: tensormat.Filled(dt, 1, c.Sigma), cotangent: tensormat.FromMatrix(dt, t.cotan)}
	w, err := t.weights.Exec1(p.x, p.alpha, p.sigma)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	p.cut = newResponsibilityCut(tensormat.Values(w))
	return p, nil
}

// traceWith is the trace at p with the mixture's Jacobian from the first
// s components of its cut, and the bound on its change from the cut.
func (t *PatchTrace) traceWith(p *cutPoint, s int) (tr, bound float64, err error) {
	jac, grad, err := t.partsWith(p, s)
	if err != nil {
		return 0, 0, err
	}
	c := p.c
	tr, absB := t.combine(c, jac, grad)
	return tr / c.Sigma, cutBound(p.cut.tail[s], t.d, c.Sigma/c.Alpha, absB), nil
}

// partsWith is the mixture's Jacobian S(j, i) (for pixels j and i within
// the halo's blocks of each other) from the first s components of p's
// cut, and the residual's feature gradients.
func (t *PatchTrace) partsWith(p *cutPoint, s int) (jac func(j, i int) float64, grad []float64, err error) {
	res, err := t.exec.Exec(p.x, p.alpha, p.sigma, p.cotangent, tensors.FromValue(p.cut.sel(s)))
	if err != nil {
		return nil, nil, fmt.Errorf("models: %w", err)
	}
	bands := make([][]float64, len(res)-2)
	for k := range bands {
		bands[k] = tensormat.Values(res[2+k])
	}
	return jacobianOf(tensormat.Values(res[1]), bands, t.d/t.geom.grid), tensormat.Values(res[0]), nil
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

// jacobianOf reads S(j, i) from jacobianBands' outputs: the dense rest
// [d, d] and, for offsets δ = 0 … H, the products of the rows' blocks of
// n pixels (one patch row each) [grid + H, n, n], block b pairing rows
// of block b with columns of block b − δ; S's low-rank part is
// symmetric, so the blocks below the diagonal are those above, transposed.
func jacobianOf(rest []float64, bands [][]float64, n int) func(j, i int) float64 {
	d := int(math.Round(math.Sqrt(float64(len(rest)))))
	return func(j, i int) float64 {
		bj, bi := j/n, i/n
		if bj < bi { // S_U(j, i) = S_U(i, j)
			bj, bi, j, i = bi, bj, i, j
		}
		return rest[j*d+i] + bands[bj-bi][(bj*n+j%n)*n+i%n]
	}
}

// jacobianBands is ∂ε_mix/∂x at a batch of one point,
// σ(Σₖ rₖ Cₖ⁻¹ − Σₖ rₖ aₖaₖᵀ + āāᵀ) with aₖ = Cₖ⁻¹Dₖ and ā = Σₖ rₖ aₖ
// (the responsibilities' own derivatives give the outer products), each
// Cₖ⁻¹ split as in eps: Uₖ diag(1/cₖ − 1/c⊥ₖ) Uₖᵀ + I/c⊥ₖ +
// (1/c_S,k − 1/c⊥ₖ) diag(Mₖ). The low-rank part σU diag(q) Uᵀ, a
// [d, K·r] × [K·r, d] product, is the costly one; it is formed only on the
// blocks of rows within halo blocks of each other (the d rows cut into
// blocks equal ones): bands[δ] [blocks + halo, n, n] holds the products
// of block b (scaled by σq) with block b − δ (zero blocks beyond the
// ends). rest [d, d] is the other terms. abar is ā [1, d] = ε_mix/σ, the
// whole mixture's also when m holds some of its components (at).
func (m *mixtureTerms) jacobianBands(blocks, halo int, abar *graph.Node) (rest *graph.Node, bands []*graph.Node) {
	kk, r, d := m.kk, m.r, m.d
	if m.bsz != 1 {
		panic(fmt.Sprintf("models: the mixture's Jacobian of a batch of %d points (one at a time)", m.bsz))
	}
	n := d / blocks
	col := func(v *graph.Node) *graph.Node { return graph.Reshape(v, kk, 1) } // [1, K] → [K, 1]
	w := graph.Sub(m.invC, graph.InsertAxes(m.invRest, -1))                   // 1/c − 1/c⊥ [1, K, r]
	q := graph.Mul(graph.Reshape(graph.Mul(w, graph.InsertAxes(m.resp, -1)), 1, kk*r), m.sigma)
	// Padded with zero blocks and shifted by concatenation (contiguous
	// copies; the backend slices element by element): bands[δ][b] pairs
	// block b of the scaled rows with block b − δ of the basis.
	h := min(halo, blocks-1)
	zeros := func(k int) *graph.Node { return graph.Zeros(m.x.Graph(), shapes.Make(m.x.DType(), k*n, kk*r)) }
	pad := func(x *graph.Node, before int) *graph.Node {
		parts := []*graph.Node{x}
		if before > 0 {
			parts = append([]*graph.Node{zeros(before)}, parts...)
		}
		if h-before > 0 {
			parts = append(parts, zeros(h-before))
		}
		return graph.Reshape(graph.Concatenate(parts, 0), blocks+h, n, kk*r)
	}
	scaled := pad(graph.Mul(m.basis, q), 0)
	for delta := 0; delta <= h; delta++ {
		bands = append(bands, graph.DotGeneral(scaled, []int{2}, []int{0}, pad(m.basis, delta), []int{2}, []int{0}))
	}
	idle := graph.Sub(m.invIdle, m.invRest) // [1, K]
	diag := graph.Add(graph.ReduceAndKeep(graph.Mul(m.resp, m.invRest), graph.ReduceSum, -1), graph.MatMul(graph.Mul(m.resp, idle), m.idle))
	rest = graph.Mul(graph.ConvertDType(graph.Diagonal(m.x.Graph(), d), m.x.DType()), diag)
	dk := graph.Sub(m.xc, graph.Mul(m.alpha, m.means)) // Dₖ [K, d]
	// Uₖ(zₖ ∘ wₖ) for every k, the basis scaled before the reshape (a
	// reshape of the stored basis would copy it).
	low := graph.ReduceSum(graph.Reshape(graph.Mul(m.basis, graph.Reshape(graph.Mul(m.z, w), 1, kk*r)), d, kk, r), -1)
	a := graph.Add(graph.Transpose(low, 0, 1), graph.Mul(graph.Add(col(m.invRest), graph.Mul(col(idle), m.idle)), dk)) // aₖ [K, d]
	spread := graph.DotGeneral(graph.Mul(col(m.resp), a), []int{0}, nil, a, []int{0}, nil)                             // Σ rₖ aₖaₖᵀ
	rest = graph.Add(graph.Sub(rest, spread), graph.DotGeneral(abar, []int{0}, nil, abar, []int{0}, nil))
	return graph.Mul(rest, m.sigma), bands
}
