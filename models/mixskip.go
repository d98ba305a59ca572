package models

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// MixtureScope is the top-level scope of a Gaussian-mixture skip: the
// fitted mixture's parameters, stored with the network (not trainable), so
// that a checkpoint carries its skip.
const MixtureScope = "mixture"

// Values of ParamSkip.
const (
	SkipNone    = "none"
	SkipMixture = "mixture" // ε̂ = ε_mix(x, t | c) + residual network
)

// SetMixtureSkip stores g in the store as the ε-network's analytic skip and
// sets ParamSkip: from then on Eps is ε_mix(x, t | c) + the network's
// output, where ε_mix = −σ ∇log q_t of g diffused (Prop. analytic_general),
// conditioned on class c by restricting g to the components labelled c
// (all components for the null class). Every component must have the same
// rank r; a class-conditional store (num_classes K > 0) needs g labelled
// with classes in [0, K), each class holding at least one component.
func SetMixtureSkip(store *model.Store, g *mixture.Gaussian) error {
	if HasNetwork(store, MixtureScope) {
		return errors.New("models: the store already holds a mixture skip")
	}
	dtype, err := DTypeOf(store)
	if err != nil {
		return err
	}
	kk, d := g.Components(), g.Dim()
	r := g.Rank(0)
	for k := 1; k < kk; k++ {
		if g.Rank(k) != r {
			return fmt.Errorf("models: mixture skip: component %d has rank %d, component 0 rank %d (all must agree)", k, g.Rank(k), r)
		}
	}
	nc := model.GetRootParamOr(store, ParamNumClasses, 0)
	labels := g.Classes()
	if nc > 0 && labels == nil {
		return fmt.Errorf("models: mixture skip: the network has %d classes but the mixture's components are unlabelled", nc)
	}
	p, err := packSkip(g, nc, labels)
	if err != nil {
		return err
	}
	scope := store.RootScope().At(MixtureScope)
	set := func(name string, v []float64, dims ...int) {
		var t *tensors.Tensor
		if dtype == dtypes.Float64 {
			t = tensors.FromFlatDataAndDimensions(v, dims...)
		} else {
			f := make([]float32, len(v))
			for i, x := range v {
				f[i] = float32(max(x, -math.MaxFloat32))
			}
			t = tensors.FromFlatDataAndDimensions(f, dims...)
		}
		scope.VariableWithValue(name, t).SetTrainable(false)
	}
	store.SetParams(map[string]any{ParamMixtureComponents: kk, ParamMixtureRank: r})
	set("centre", p.centre, d)
	set("means", p.means, kk, d)
	set("basis", p.basis, d, kk*r)
	set("means_proj", p.proj, kk*r)
	set("lambda", p.lam, kk*r)
	set("rho", p.rho, kk)
	set("idle", p.idle, kk, d)
	set("idle_var", p.nu, kk)
	set("rest_dim", p.nRest, kk)
	set("idle_dim", p.nIdle, kk)
	set("log_weights", p.logw, nc+1, kk)
	store.SetParam(ParamSkip, SkipMixture)
	return nil
}

// skipArrays are a mixture skip's variables (SetMixtureSkip), in float64.
type skipArrays struct {
	centre, means, basis, proj, lam, rho, idle, nu, nRest, nIdle, logw []float64
}

// packSkip lays out g's components for MixtureEps: centred means, the
// bases side by side, the idle masks, and the log-weights of each class
// (row nc: the null class, all components) renormalised within the class.
func packSkip(g *mixture.Gaussian, nc int, labels []int) (*skipArrays, error) {
	kk, d, r := g.Components(), g.Dim(), g.Rank(0)
	// Centred at the mean of the means (smaller norms, less float32
	// rounding in ‖x − αμ_k‖²): μ'_k = μ_k − m̄.
	centre := make([]float64, d)
	for k := 0; k < kk; k++ {
		for j, v := range g.Component(k).Mean {
			centre[j] += v / float64(kk)
		}
	}
	means := make([]float64, kk*d)
	basis := make([]float64, d*kk*r) // [d, K·r]: U_k side by side
	proj := make([]float64, kk*r)    // μ'_kᵀ U_k
	lam := make([]float64, kk*r)
	rho := make([]float64, kk)
	idle := make([]float64, kk*d) // [K, d]: 1 on the idle coordinates
	nu := make([]float64, kk)
	nRest, nIdle := make([]float64, kk), make([]float64, kk)
	logw := make([]float64, (nc+1)*kk) // [class, K]; row nc: the null class (all components)
	counts := make([]int, nc)
	for k := 0; k < kk; k++ {
		cp := g.Component(k)
		for j := range d {
			means[k*d+j] = cp.Mean[j] - centre[j]
		}
		for i := 0; i < d; i++ {
			row := cp.Basis.RawRowView(i)
			copy(basis[i*kk*r+k*r:i*kk*r+(k+1)*r], row)
			for j, v := range row {
				proj[k*r+j] += means[k*d+i] * v
			}
		}
		copy(lam[k*r:], cp.Lambda)
		rho[k], nu[k] = cp.Rest, cp.IdleVar
		for _, j := range cp.Idle {
			idle[k*d+j] = 1
		}
		nIdle[k] = float64(len(cp.Idle))
		nRest[k] = float64(d - r - len(cp.Idle))
		for c := 0; c < nc; c++ {
			logw[c*kk+k] = math.Inf(-1)
		}
		logw[nc*kk+k] = math.Log(cp.Weight)
		if nc > 0 {
			c := labels[k]
			if c >= nc {
				return nil, fmt.Errorf("models: mixture skip: component %d has label %d, the network has %d classes", k, c, nc)
			}
			logw[c*kk+k] = math.Log(cp.Weight)
			counts[c]++
		}
	}
	for c, n := range counts {
		if n == 0 {
			return nil, fmt.Errorf("models: mixture skip: no component has label %d", c)
		}
	}
	normaliseClassRows(logw, nc, kk)
	return &skipArrays{centre: centre, means: means, basis: basis, proj: proj, lam: lam, rho: rho, idle: idle, nu: nu, nRest: nRest, nIdle: nIdle, logw: logw}, nil
}

// normaliseClassRows makes each row of logw [nc+1, K] log π_k − log
// Σ_{k∈c} π_k.
func normaliseClassRows(logw []float64, nc, kk int) {
	// Class rows renormalised: log π_k − log Σ_{k∈c} π_k; excluded components
	// get a large negative logit (−Inf would give NaN gradients in the softmax).
	for c := 0; c <= nc; c++ {
		row := logw[c*kk : (c+1)*kk]
		norm := stats.LogSumExp(row)
		for k, v := range row {
			if math.IsInf(v, -1) {
				row[k] = -1e30
			} else {
				row[k] = v - norm
			}
		}
	}
}

// MixtureEps is ε_mix(x, t | c) = σ Σ_k r_k C_k⁻¹ (x − αμ_k) [B, d] of the
// stored mixture skip (see SetMixtureSkip and mixture.Gaussian), with
// C_k = α²Σ_k + σ²I and r_k the responsibilities under the class's weights,
// in the store's float dtype. Everything runs as products with the
// side-by-side bases U = [U_1 … U_K] ([d, K·r]) and the idle masks M
// ([K, d]): with x' = x − αm̄, μ'_k = μ_k − m̄ and D_k = x' − αμ'_k,
// z_k = U_kᵀx' − α U_kᵀμ'_k, ‖D_k‖² = ‖x'‖² − 2α x'·μ'_k + α²‖μ'_k‖², the
// idle part ‖M_k∘D_k‖² likewise, the rest's ‖D_k‖² − ‖z_k‖² − ‖M_k∘D_k‖²,
// and Σ_k r_k C_k⁻¹D_k = U·[r_k z_k(1/c_k − 1/c⊥_k)]_k + Σ_k (r_k/c⊥_k) D_k
// + Σ_k r_k(1/c_S,k − 1/c⊥_k) M_k∘D_k. It panics if the store has no skip.
func MixtureEps(scope *model.Scope, in Inputs) *graph.Node {
	return mixtureTermsOf(scope, in).eps()
}

// mixtureTerms are the per-component quantities of the stored mixture at
// a batch (MixtureEps's notation), from which ε_mix and the posterior's
// second moment are sums.
type mixtureTerms struct {
	in                                  Inputs
	x, alpha, sigma, a2, s2             *graph.Node // x [B, d]; α, σ, α², σ² [B, 1] ([1, 1] at one time)
	centre, means, basis, proj, lam     *graph.Node
	blocks                              []*graph.Node // Uᵀ in row blocks (basisBlocks), or nil
	idleMeans, norms                    *graph.Node   // M∘μ' [K, d]; ‖μ'_k‖², ‖M∘μ'‖² [2, K] (mixtureTables)
	xMu, xIdleMu                        *graph.Node   // x'·μ'_k, x'·(M∘μ'_k) [B, K]
	rho, nu, nRest, nIdle, idle         *graph.Node
	xc, z, c, invC                      *graph.Node // x' [B, d]; z [B, K, r]; c, 1/c [B, K, r] ([1, K, r] at one time)
	dAll, dIdle, rest                   *graph.Node // ‖D_k‖², ‖M_k∘D_k‖², ‖P_k D_k‖² [B, K]
	cRest, cIdle, invRest, invIdle, has *graph.Node // [B, K]; has: 1 where the component has a rest
	resp                                *graph.Node // r_k [B, K]
	bsz, kk, r, d                       int
}

// CheckMixtureSkip reports a store whose networks read a mixture skip (the
// ε-network's skip = mixture, or a trace network's trace_skip) but that
// holds none: a trace network's checkpoint loaded without its ε-network,
// whose mixture it borrows. Without the check the graph would create the
// mixture's variables afresh.
func CheckMixtureSkip(store *model.Store) error {
	if HasNetwork(store, MixtureScope) {
		return nil
	}
	if model.GetRootParamOr(store, ParamSkip, SkipNone) == SkipMixture {
		return errors.New("models: skip = mixture but the store holds no mixture (SetMixtureSkip)")
	}
	for _, n := range []string{TraceScope, CentredTraceScope} {
		if HasNetwork(store, n) && model.GetParamOr(store.RootScope().At("%s", n), ParamTraceSkip, false) {
			return fmt.Errorf("models: the %s network starts from its ε-network's mixture skip (trace_skip), which "+
				"this store lacks: load it beside its ε-network", n)
		}
	}
	return nil
}

func mixtureTermsOf(scope *model.Scope, in Inputs) *mixtureTerms {
	g := in.X.Graph()
	kk := model.GetParamOr(scope, ParamMixtureComponents, 0)
	r := model.GetParamOr(scope, ParamMixtureRank, 0)
	nc := model.GetParamOr(scope, ParamNumClasses, 0)
	d := in.X.Shape().Dimensions[1]
	if kk < 1 || r < 1 || r > d {
		panic(fmt.Sprintf("models: mixture skip of %d components of rank %d in d = %d (SetMixtureSkip)", kk, r, d))
	}
	root := scope.At(MixtureScope)
	dt := in.X.DType()
	v := func(name string, dims ...int) *graph.Node {
		vr := root.VariableWithShape(name, shapes.Make(dt, dims...))
		vr.SetTrainable(false)
		return vr.NodeValue(g)
	}
	m := &mixtureTerms{bsz: in.X.Shape().Dimensions[0], kk: kk, r: r, d: d, in: in, x: in.X}
	m.centre, m.means, m.basis, m.proj = v("centre", d), v("means", kk, d), v("basis", d, kk*r), v("means_proj", kk*r)
	m.lam, m.rho = v("lambda", kk*r), v("rho", kk)
	logw := v("log_weights", nc+1, kk)
	m.idle, m.nu, m.nRest, m.nIdle = v("idle", kk, d), v("idle_var", kk), v("rest_dim", kk), v("idle_dim", kk)
	x, bsz := in.X, m.bsz
	m.alpha, m.sigma = graph.InsertAxes(in.Alpha, -1), graph.InsertAxes(in.Sigma, -1) // [B, 1]
	// Rows at one time (dfx/access's host calls): every t-dependent factor
	// below is per component, [1, K] and [1, K, r], and broadcasts over the
	// rows; the work left per row is products and a few passes over z.
	if a, s := access.SharedTime(in.Alpha), access.SharedTime(in.Sigma); a != nil && s != nil {
		m.alpha, m.sigma = graph.Reshape(a, 1, 1), graph.Reshape(s, 1, 1)
	}
	rows := m.alpha.Shape().Dimensions[0] // B, or 1 at one time
	alpha := m.alpha
	m.a2, m.s2 = graph.Square(m.alpha), graph.Square(m.sigma)
	a2, s2 := m.a2, m.s2
	row := func(n *graph.Node) *graph.Node { return graph.InsertAxes(n, 0) } // [K] → [1, K]
	m.xc = graph.Sub(x, graph.Mul(alpha, row(m.centre)))                     // x' [B, d]
	m.blocks = basisBlocks(scope, g, d, kk, r)
	m.z = graph.Reshape(graph.Sub(m.project(m.xc), graph.Mul(alpha, row(m.proj))), bsz, kk, r)
	m.c = graph.Add(graph.Mul(graph.InsertAxes(a2, -1), graph.Reshape(m.lam, 1, kk, r)), graph.InsertAxes(s2, -1)) // [B, K, r]
	// Per row, the passes over [B, K, r] are z², its two sums and (in eps)
	// z (1/c − 1/c⊥) r_k; the reciprocals are per component at one time.
	m.invC = graph.Reciprocal(m.c)
	zsq := graph.Square(m.z)
	maha := graph.ReduceSum(graph.Mul(zsq, m.invC), -1) // [B, K]
	logdet := graph.ReduceSum(graph.Log(m.c), -1)
	m.idleMeans, m.norms = mixtureTables(scope, g, m.means, m.idle)
	m.xMu = graph.DotGeneral(m.xc, []int{1}, nil, m.means, []int{1}, nil)
	m.xIdleMu = graph.DotGeneral(m.xc, []int{1}, nil, m.idleMeans, []int{1}, nil)
	xsq := graph.Square(m.xc)
	m.dAll = m.sqDist(graph.ReduceAndKeep(xsq, graph.ReduceSum, -1), m.xMu, m.norm(0))
	m.dIdle = m.sqDist(graph.DotGeneral(xsq, []int{1}, nil, m.idle, []int{1}, nil), m.xIdleMu, m.norm(1))
	m.cRest = graph.Add(graph.Mul(a2, row(m.rho)), s2) // [B, K]
	m.cIdle = graph.Add(graph.Mul(a2, row(m.nu)), s2)
	m.has = graph.BroadcastToDims(graph.ConvertDType(graph.GreaterThan(row(m.nRest), graph.ZerosLike(row(m.nRest))), dt), rows, kk)
	m.invRest = graph.Div(m.has, m.cRest) // 1/c⊥, 0 without a rest
	m.invIdle = graph.Div(graph.OnesLike(m.cIdle), m.cIdle)
	m.rest = graph.Max(graph.Sub(graph.Sub(m.dAll, graph.ReduceSum(zsq, -1)), m.dIdle), graph.ZerosLike(m.dAll))
	maha = graph.Add(maha, graph.Add(graph.Mul(m.rest, m.invRest), graph.Mul(m.dIdle, m.invIdle)))
	logdet = graph.Add(logdet, graph.Add(graph.Mul(row(m.nRest), graph.Log(m.cRest)), graph.Mul(row(m.nIdle), graph.Log(m.cIdle))))
	loglik := graph.MulScalar(graph.Add(maha, logdet), -0.5) // [B, K]; the 2π term cancels in r_k
	var prior *graph.Node                                    // [B, K]
	if in.Class != nil && nc > 0 {
		prior = graph.MatMul(graph.OneHot(in.Class, nc+1, x.DType()), logw)
	} else {
		prior = graph.BroadcastToDims(graph.Slice(logw, graph.AxisRange(nc, nc+1)), bsz, kk)
	}
	m.resp = graph.Softmax(graph.Add(loglik, prior), -1) // [B, K]
	return m
}

// sqDist is Σ_j w_kj D_kj² [B, K] = Σ w x'² − 2α x'·(w∘μ'_k) + α² Σ w μ'²
// from its three terms.
func (m *mixtureTerms) sqDist(xx, xm, mm *graph.Node) *graph.Node {
	return graph.Add(graph.Sub(xx, graph.MulScalar(graph.Mul(m.alpha, xm), 2)), graph.Mul(m.a2, mm))
}

// norm is row i of mixtureTables' norms [1, K].
func (m *mixtureTerms) norm(i int) *graph.Node {
	return graph.Slice(m.norms, graph.AxisRange(i, i+1))
}

// backProject is w Uᵀ [B, d] for w [B, K·r]. The Go backend repacks a
// product's operands on every call: the 40 MB basis as the right operand
// of this transposed product goes through its scalar packer, as the left
// operand of (U wᵀ)ᵀ through its SIMD one, but the swapped product pads
// its right operand wᵀ to the micro-kernel's width, doing a 32-row
// batch's work for fewer rows; so batches of at least swapRows rows swap.
// The swapped product's gradient, though, made the backend transpose the
// whole basis on every VJP call (it moves both operands of a product
// whose left operand contracts its first axis to its preferred layout:
// 13 % of a batch-64 VJP). With the basis in blocks of Uᵀ (basisBlocks),
// every batch takes w's column blocks times the blocks instead: unpacked
// for one row, and for more rows in a layout whose gradient needs no
// transpose (as fast as the whole basis at 2–8 rows, twice as fast from
// 16: figures/bench/NOTES.md).
func (m *mixtureTerms) backProject(w *graph.Node) *graph.Node {
	if m.blocks != nil {
		return m.backProjectBlocks(w)
	}
	if m.bsz < swapRows {
		return graph.DotGeneral(w, []int{1}, nil, m.basis, []int{1}, nil)
	}
	return graph.Transpose(graph.DotGeneral(m.basis, []int{1}, nil, w, []int{1}, nil), 0, 1)
}

// swapRows is the batch from which backProject swaps its operands.
const swapRows = 16

// eps is ε_mix = σ Σ_k r_k C_k⁻¹ D_k.
func (m *mixtureTerms) eps() *graph.Node {
	bsz, kk, r := m.bsz, m.kk, m.r
	coef := graph.Mul(m.z, graph.Sub(m.invC, graph.InsertAxes(m.invRest, -1)))
	weighted := graph.Reshape(graph.Mul(coef, graph.InsertAxes(m.resp, -1)), bsz, kk*r)
	out := m.backProject(weighted)     // [B, d]
	wr := graph.Mul(m.resp, m.invRest) // r_k/c⊥_k
	out = graph.Add(out, graph.Sub(graph.Mul(m.xc, graph.ReduceAndKeep(wr, graph.ReduceSum, -1)), graph.Mul(m.alpha, graph.MatMul(wr, m.means))))
	wi := graph.Mul(m.resp, graph.Sub(m.invIdle, m.invRest)) // r_k(1/c_S − 1/c⊥)
	out = graph.Add(out, graph.Sub(graph.Mul(m.xc, graph.MatMul(wi, m.idle)), graph.Mul(m.alpha, graph.MatMul(wi, m.idleMeans))))
	return graph.Mul(out, m.sigma)
}

// MixtureSecondMoment is E_mix[‖x₀‖² | x_t] [B] under the stored mixture
// skip (class-conditional like MixtureEps): with component posteriors
// N(m_k, P_k), m_k = μ_k + α S_k D_k, S_k = Σ_k C_k⁻¹ (λ/c along U_k, ρ/c⊥
// on the rest, ν/c_S on the idle pixels) and tr P_k = σ²(Σ λ/c + n⊥ρ/c⊥ +
// n_S ν/c_S), it is Σ_k r_k(‖m_k‖² + tr P_k), each term a sum of the
// products MixtureEps already forms. It panics if the store has no skip.
func MixtureSecondMoment(scope *model.Scope, in Inputs) *graph.Node {
	s, _ := mixtureMoments(scope, in)
	return s
}

// mixtureMoments is MixtureSecondMoment and the skip's denoiser ȳ_mix
// [B, d], from one evaluation of the mixture's terms.
func mixtureMoments(scope *model.Scope, in Inputs) (second, y *graph.Node) {
	m := mixtureTermsOf(scope, in)
	row := func(n *graph.Node) *graph.Node { return graph.InsertAxes(n, 0) }
	lamK := graph.Reshape(m.lam, 1, m.kk, m.r)
	lc := graph.Div(lamK, m.c)             // λ/c [B, K, r] ([1, K, r] at one time)
	rc := graph.Mul(row(m.rho), m.invRest) // ρ/c⊥ (0 without a rest)
	nc := graph.Mul(row(m.nu), m.invIdle)  // ν/c_S
	// tr P_k
	trP := graph.Mul(m.s2, graph.Add(graph.ReduceSum(lc, -1), graph.Add(graph.Mul(row(m.nRest), rc), graph.Mul(row(m.nIdle), nc))))
	// ‖S_k D_k‖²
	sd2 := graph.Add(graph.ReduceSum(graph.Square(graph.Mul(lc, m.z)), -1),
		graph.Add(graph.Mul(graph.Square(rc), m.rest), graph.Mul(graph.Square(nc), m.dIdle)))
	// μ'_k·S_k D_k, with μ'·P D = μ'·D − (U_kᵀμ')·z − μ'_S·D_S
	mu2 := m.norm(0)                                 // ‖μ'_k‖² [1, K]
	muD := graph.Sub(m.xMu, graph.Mul(m.alpha, mu2)) // μ'·D [B, K]
	muS2 := m.norm(1)
	muSD := graph.Sub(m.xIdleMu, graph.Mul(m.alpha, muS2)) // μ'_S·D_S
	projK := graph.Reshape(m.proj, 1, m.kk, m.r)
	muUz := graph.ReduceSum(graph.Mul(projK, m.z), -1)
	muSDk := graph.Add(graph.ReduceSum(graph.Mul(projK, graph.Mul(lc, m.z)), -1),
		graph.Add(graph.Mul(rc, graph.Sub(graph.Sub(muD, muUz), muSD)), graph.Mul(nc, muSD)))
	// ‖m'_k‖² = ‖μ'_k‖² + 2α μ'_k·S_k D_k + α²‖S_k D_k‖², in centred coordinates
	mk2 := graph.Add(graph.Add(mu2, graph.MulScalar(graph.Mul(m.alpha, muSDk), 2)), graph.Mul(m.a2, sd2))
	centred := graph.ReduceSum(graph.Mul(m.resp, graph.Add(mk2, trP)), -1) // E‖x₀'‖² [B]
	// E‖x₀‖² = ‖m̄‖² + 2 m̄·E[x₀'] + E‖x₀'‖², E[x₀'] = ȳ − m̄ with ȳ the denoiser.
	y = access.DenoiserFromEpsGraph(m.x, m.eps(), m.in.Alpha, m.in.Sigma)
	mbar := row(m.centre)
	cross := graph.ReduceSum(graph.Mul(mbar, graph.Sub(graph.MulScalar(y, 2), mbar)), -1) // 2m̄·ȳ − ‖m̄‖²
	return graph.Add(centred, cross), y
}

// MixtureSkipOf rebuilds the Gaussian mixture stored as a network's skip
// (SetMixtureSkip), components labelled by class when the network has
// classes; in float64 from the store's values (rounded to float32 in a
// float32 store).
func MixtureSkipOf(store *model.Store) (*mixture.Gaussian, error) {
	if !HasNetwork(store, MixtureScope) {
		return nil, errors.New("models: the store holds no mixture skip")
	}
	root := store.RootScope().At(MixtureScope)
	get := func(name string) ([]float64, []int, error) {
		v := root.GetVariable(name)
		if v == nil {
			return nil, nil, fmt.Errorf("models: mixture skip variable %q missing", name)
		}
		t, err := v.Value()
		if err != nil {
			return nil, nil, err
		}
		return tensormat.Copy(t), t.Shape().Dimensions, nil
	}
	vals, dims := map[string][]float64{}, map[string][]int{}
	for _, name := range []string{"centre", "means", "basis", "lambda", "rho", "idle", "idle_var", "log_weights"} {
		v, dd, err := get(name)
		if err != nil {
			return nil, err
		}
		vals[name], dims[name] = v, dd
	}
	bad := errors.New("models: mixture skip variables of inconsistent shapes")
	md, wd := dims["means"], dims["log_weights"]
	if len(md) != 2 || len(wd) != 2 || md[0] < 1 || md[1] < 1 || wd[0] < 1 {
		return nil, bad
	}
	kk, d := md[0], md[1]
	centre, means, basis, lam := vals["centre"], vals["means"], vals["basis"], vals["lambda"]
	rho, idle, nu, logw := vals["rho"], vals["idle"], vals["idle_var"], vals["log_weights"]
	if len(centre) != d || len(lam) < kk || len(lam)%kk != 0 || len(basis) != d*len(lam) || len(rho) != kk ||
		len(idle) != kk*d || len(nu) != kk || len(logw) != wd[0]*kk || wd[1] != kk {
		return nil, bad
	}
	r := len(lam) / kk
	nc := wd[0] - 1
	comps := make([]mixture.Component, kk)
	labels := make([]int, kk)
	for k := range comps {
		mean := make([]float64, d)
		u := mat.NewDense(d, r, nil)
		var idx []int
		for j := 0; j < d; j++ {
			mean[j] = means[k*d+j] + centre[j]
			for l := 0; l < r; l++ {
				u.Set(j, l, basis[j*kk*r+k*r+l])
			}
			if idle[k*d+j] != 0 {
				idx = append(idx, j)
			}
		}
		comps[k] = mixture.Component{Mean: mean, Basis: orthonormalised(u), Lambda: lam[k*r : (k+1)*r], Rest: rho[k],
			Idle: idx, IdleVar: nu[k], Weight: math.Exp(logw[nc*kk+k])}
		for c := 0; c < nc; c++ {
			if logw[c*kk+k] > -1e29 {
				labels[k] = c
			}
		}
	}
	g, err := mixture.NewLowRank(comps)
	if err != nil {
		return nil, err
	}
	if nc > 0 {
		if err := g.SetClasses(labels); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// orthonormalised re-orthonormalises the columns of u (modified
// Gram–Schmidt), undoing the float32 rounding of a stored basis.
func orthonormalised(u *mat.Dense) *mat.Dense {
	d, r := u.Dims()
	for l := 0; l < r; l++ {
		col := mat.Col(nil, l, u)
		for p := 0; p < l; p++ {
			pr := 0.0
			for j := 0; j < d; j++ {
				pr += col[j] * u.At(j, p)
			}
			for j := 0; j < d; j++ {
				col[j] -= pr * u.At(j, p)
			}
		}
		n := 0.0
		for _, v := range col {
			n += v * v
		}
		n = math.Sqrt(n)
		for j := 0; j < d; j++ {
			u.Set(j, l, col[j]/n)
		}
	}
	return u
}
