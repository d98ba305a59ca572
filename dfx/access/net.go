package access

import (
	"errors"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// EpsFn builds ε_θ(x, t) [R, d] for x [R, d] and per-row α, σ [R]. Rows must
// not interact (every estimator tiles queries along the batch axis).
type EpsFn func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node

// ScalarFn builds a per-row scalar [R] of (x [R, d], α, σ [R]), e.g. the
// DF-TM network t_θ.
type ScalarFn func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node

// GuidedFn builds classifier-free guidance ε̃ = ε_∅ + s (ε_c − ε_∅) [R, d]
// (GuidedEpsGraph) of a class-conditional network for x [R, d], the class
// labels [R] (Int32) and the scales s [R], at per-row α, σ [R].
type GuidedFn func(scope *model.Scope, x, class, scale, alpha, sigma *graph.Node) *graph.Node

// Network is what a noise-conditional network must provide to dfx/access,
// as graph functions (one model contract for every estimator and sampler):
//
//   - Eps: the noise prediction ε_θ(x_t, t) [R, d]; a network that predicts
//     the denoiser ȳ_θ = E[x₀|x_t] supplies EpsFromDenoiser(ȳ_θ);
//   - T: the DF-TM scalar t_θ(x_t, t) [R] ≈ E[‖x₀‖² | x_t]/d (paper
//     Algorithm tnet, Prop. optimal_t); nil if none;
//   - Nu: the centred DF-TM scalar ν_θ(x_t, t) [R] ≈ ‖ε̂_θ − ε‖²/d (ours,
//     see DFTMCentred); nil if none;
//   - Guided: classifier-free guidance of a class-conditional network
//     (NetModel.Guidance); nil if none.
//
// Each function reads its variables from the scope it is given; it may be
// called more than once in one graph (VJPs call Eps once per graph).
type Network struct {
	Eps    EpsFn
	T      ScalarFn
	Nu     ScalarFn
	Guided GuidedFn
}

// EpsFromDenoiser turns a denoiser ȳ_θ(x, t) [R, d] into the noise
// prediction ε = (x − α ȳ)/σ that Network.Eps expects.
func EpsFromDenoiser(denoiser EpsFn) EpsFn {
	return func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return EpsFromDenoiserGraph(x, denoiser(scope, x, alpha, sigma), alpha, sigma)
	}
}

// Net is a Network with everything needed to run it on the host. Its
// fields may be changed before an estimator is built from it (e.g. T = nil
// for a Net without a DF-TM network), but not after a host wrapper (EpsAt,
// DenoiserAt, TAt, NuAt) has compiled them; a Net is not safe for
// concurrent use. The graphs take α and σ per row, so every evaluation is
// keyed by the coefficients c of its time; Schedule is the one the network
// was trained on (kept for provenance checks).
type Net struct {
	Network
	Backend  compute.Backend
	Store    *model.Store // holds the network's variables
	Schedule schedule.Schedule
	DType    dtypes.DType // Float32 or Float64: the dtype of the graphs' inputs

	host hostExecs // compiled host wrappers
}

type hostExecs struct{ eps, den, t, nu, guided *model.Exec }

// NewNet bundles a network with its backend, variables (a new store when
// store is nil), schedule and dtype.
func NewNet(backend compute.Backend, store *model.Store, s schedule.Schedule, dtype dtypes.DType, net Network) *Net {
	if store == nil {
		store = model.NewStore()
	}
	return &Net{Network: net, Backend: backend, Store: store, Schedule: s, DType: dtype}
}

// EpsAt is ε_θ(x) [B, d] at the coefficients c for queries x [B, d].
func (n *Net) EpsAt(c schedule.Coefficients, x *mat.Dense) (*mat.Dense, error) {
	return n.rowsAt(&n.host.eps, n.Eps, c, x)
}

// DenoiserAt is ȳ_θ(x) = (x − σ ε_θ)/α [B, d] (paper Prop. optimal_y).
func (n *Net) DenoiserAt(c schedule.Coefficients, x *mat.Dense) (*mat.Dense, error) {
	return n.rowsAt(&n.host.den, func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return DenoiserGraph(n.Network, scope, x, alpha, sigma)
	}, c, x)
}

// TAt is the DF-TM network's output t_θ(x) [B] at c.
func (n *Net) TAt(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	if n.T == nil {
		return nil, errors.New("access: no DF-TM network (Net.T)")
	}
	return n.scalarFnAt(&n.host.t, n.T, c, x)
}

// NuAt is the centred DF-TM network's output ν_θ(x) [B] at c.
func (n *Net) NuAt(c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	if n.Nu == nil {
		return nil, errors.New("access: no centred DF-TM network (Net.Nu)")
	}
	return n.scalarFnAt(&n.host.nu, n.Nu, c, x)
}

// GuidedEpsAt is classifier-free guidance ε̃ = ε(x, ∅) + s (ε(x, c) − ε(x, ∅))
// [B, d] at c for queries x [B, d], row i with class[i] and scale[i] (one
// pass of Network.Guided).
func (n *Net) GuidedEpsAt(c schedule.Coefficients, x *mat.Dense, class []int, scale []float64) (*mat.Dense, error) {
	if n.Guided == nil {
		return nil, errors.New("access: no classifier-free guidance (Net.Guided): the network is not class-conditional")
	}
	b, d, err := checkAt(c, x, nil)
	if err != nil {
		return nil, err
	}
	if len(class) != b || len(scale) != b {
		return nil, fmt.Errorf("access: guided ε of %d points with %d classes and %d scales", b, len(class), len(scale))
	}
	if n.host.guided == nil {
		if n.host.guided, err = n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
			return n.Guided(scope, in[0], in[1], in[2], rowTimes(in[3], in[0]), rowTimes(in[4], in[0]))
		}); err != nil {
			return nil, err
		}
	}
	cl := make([]int32, b)
	for i, k := range class {
		cl[i] = int32(k)
	}
	dt := n.DType
	alpha, sigma := timesOf(dt, c)
	out, err := n.host.guided.Exec(tensormat.FromMatrix(dt, x), tensors.FromFlatDataAndDimensions(cl, b), tensormat.FromFlat(dt, scale, b), alpha, sigma)
	if err != nil {
		return nil, fmt.Errorf("access: guided ε: %w", err)
	}
	return tensormat.Dense(out[0], b, d), nil
}

func (n *Net) rowsAt(slot **model.Exec, fn EpsFn, c schedule.Coefficients, x *mat.Dense) (*mat.Dense, error) {
	if fn == nil {
		return nil, errors.New("access: no score network (Net.Eps)")
	}
	e, err := n.cached(slot, fn)
	if err != nil {
		return nil, err
	}
	v, err := n.scalarAt(e, c, x)
	if err != nil {
		return nil, err
	}
	b, d := x.Dims()
	return mat.NewDense(b, d, v), nil
}

func (n *Net) scalarFnAt(slot **model.Exec, fn ScalarFn, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	e, err := n.cached(slot, EpsFn(fn))
	if err != nil {
		return nil, err
	}
	return n.scalarAt(e, c, x)
}

// cached compiles fn into *slot on first use.
func (n *Net) cached(slot **model.Exec, fn EpsFn) (*model.Exec, error) {
	if *slot == nil {
		e, err := n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
			return fn(scope, in[0], rowTimes(in[1], in[0]), rowTimes(in[2], in[0]))
		})
		if err != nil {
			return nil, err
		}
		*slot = e
	}
	return *slot, nil
}

// scalarAt runs a compiled graph of (x, α, σ) at c and returns its flat output.
func (n *Net) scalarAt(exec *model.Exec, c schedule.Coefficients, x *mat.Dense) ([]float64, error) {
	if _, _, err := checkAt(c, x, nil); err != nil {
		return nil, err
	}
	alpha, sigma := timesOf(n.DType, c)
	res, err := exec.Exec(tensormat.FromMatrix(n.DType, x), alpha, sigma)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return tensormat.Values(res[0]), nil
}

// checkAt checks a batch (and its vectors v, nil for none) and the
// coefficients it is evaluated at, and returns its size and dimension: the
// prologue of every estimator.
func checkAt(c schedule.Coefficients, x, v *mat.Dense) (b, d int, err error) {
	if b, d, err = checkBatch(x, v); err != nil {
		return 0, 0, err
	}
	if err := c.Check(); err != nil {
		return 0, 0, fmt.Errorf("access: %w", err)
	}
	return b, d, nil
}

// exec builds a model.Exec whose graph function takes a slice of inputs.
func (n *Net) exec(fn func(scope *model.Scope, in []*graph.Node) *graph.Node) (*model.Exec, error) {
	if n.Store == nil {
		n.Store = model.NewStore()
	}
	return model.NewExec(n.Backend, n.Store, fn)
}

// timesOf are c's α and σ as a graph's inputs [1]: every row of a host call
// is at one time, and rowTimes gives each row its copy.
func timesOf(dt dtypes.DType, c schedule.Coefficients) (alpha, sigma *tensors.Tensor) {
	return tensormat.Filled(dt, 1, c.Alpha), tensormat.Filled(dt, 1, c.Sigma)
}

// rowTimes is a call's one α or σ [1] as the per-row vector [R] over the
// rows of x that the graph functions take; SharedTime recognises it.
func rowTimes(t, x *graph.Node) *graph.Node { return graph.BroadcastToDims(t, x.Shape().Dimensions[0]) }

// SharedTime returns the one value [] behind per-row times [R] (α or σ)
// when every row holds it by construction — the graph broadcast a single
// value to the rows, as the host wrappers of Net do, each call being at one
// time — and nil when the rows may differ (a training batch). A network
// may then compute what depends on t alone once per call instead of once
// per row (the mixture skip's per-component variances, models.MixtureEps).
func SharedTime(perRow *graph.Node) *graph.Node {
	if perRow.Type() != graph.NodeTypeBroadcastInDim {
		return nil
	}
	src := perRow.Inputs()[0]
	if src.Shape().Size() != 1 {
		return nil
	}
	return graph.Reshape(src)
}
