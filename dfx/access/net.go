package access

import (
	"errors"
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// EpsFn builds ε_θ(x, t) [R, d] for x [R, d] and per-row α, σ [R]. Rows must
// not interact (every estimator tiles queries along the batch axis).
type EpsFn func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node

// ScalarFn builds a per-row scalar [R] of (x [R, d], α, σ [R]), e.g. the
// DF-TM network t_θ.
type ScalarFn func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node

// Network is what a noise-conditional network must provide to dfx/access,
// as graph functions (one model contract for every estimator and sampler):
//
//   - Eps: the noise prediction ε_θ(x_t, t) [R, d]; a network that predicts
//     the denoiser ȳ_θ = E[x₀|x_t] supplies EpsFromDenoiser(ȳ_θ);
//   - T: the DF-TM scalar t_θ(x_t, t) [R] ≈ E[‖x₀‖² | x_t]/d (paper
//     Algorithm tnet, Prop. optimal_t); nil if none;
//   - Nu: the centred DF-TM scalar ν_θ(x_t, t) [R] ≈ ‖ε̂_θ − ε‖²/d (ours,
//     see DFTMCentred); nil if none.
//
// Each function reads its variables from the scope it is given; it may be
// called more than once in one graph (VJPs call Eps once per graph).
type Network struct {
	Eps EpsFn
	T   ScalarFn
	Nu  ScalarFn
}

// EpsFromDenoiser turns a denoiser ȳ_θ(x, t) [R, d] into the noise
// prediction ε = (x − α ȳ)/σ that Network.Eps expects.
func EpsFromDenoiser(denoiser EpsFn) EpsFn {
	return func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		y := denoiser(scope, x, alpha, sigma)
		return graph.Div(graph.Sub(x, graph.Mul(graph.InsertAxes(alpha, -1), y)), graph.InsertAxes(sigma, -1))
	}
}

// Net is a Network with everything needed to run it on the host. Its
// fields may be changed before an estimator is built from it (e.g. T = nil
// for a Net without a DF-TM network), but not after a host wrapper (EpsAt,
// DenoiserAt, TAt, NuAt) has compiled them; a Net is not safe for
// concurrent use.
type Net struct {
	Network
	Backend  compute.Backend
	Store    *model.Store // holds the network's variables
	Schedule schedule.Schedule
	DType    dtypes.DType // Float32 or Float64: the dtype of the graphs' inputs

	host hostExecs // compiled host wrappers
}

type hostExecs struct{ eps, den, t, nu *model.Exec }

// NewNet bundles a network with its backend, variables (a new store when
// store is nil), schedule and dtype.
func NewNet(backend compute.Backend, store *model.Store, s schedule.Schedule, dtype dtypes.DType, net Network) *Net {
	if store == nil {
		store = model.NewStore()
	}
	return &Net{Network: net, Backend: backend, Store: store, Schedule: s, DType: dtype}
}

// EpsAt is ε_θ(x, t) [B, d] for queries x [B, d].
func (n *Net) EpsAt(x *mat.Dense, t float64) (*mat.Dense, error) {
	return n.rowsAt(&n.host.eps, n.Eps, x, t)
}

// DenoiserAt is ȳ_θ(x, t) = (x − σ ε_θ)/α [B, d] (paper Prop. optimal_y).
func (n *Net) DenoiserAt(x *mat.Dense, t float64) (*mat.Dense, error) {
	return n.rowsAt(&n.host.den, func(scope *model.Scope, x, alpha, sigma *graph.Node) *graph.Node {
		return DenoiserGraph(n.Network, scope, x, alpha, sigma)
	}, x, t)
}

// TAt is the DF-TM network's output t_θ(x, t) [B].
func (n *Net) TAt(x *mat.Dense, t float64) ([]float64, error) {
	if n.T == nil {
		return nil, errors.New("access: no DF-TM network (Net.T)")
	}
	return n.scalarFnAt(&n.host.t, n.T, x, t)
}

// NuAt is the centred DF-TM network's output ν_θ(x, t) [B].
func (n *Net) NuAt(x *mat.Dense, t float64) ([]float64, error) {
	if n.Nu == nil {
		return nil, errors.New("access: no centred DF-TM network (Net.Nu)")
	}
	return n.scalarFnAt(&n.host.nu, n.Nu, x, t)
}

func (n *Net) rowsAt(slot **model.Exec, fn EpsFn, x *mat.Dense, t float64) (*mat.Dense, error) {
	if fn == nil {
		return nil, errors.New("access: no score network (Net.Eps)")
	}
	e, err := n.cached(slot, fn)
	if err != nil {
		return nil, err
	}
	v, err := n.scalarAt(e, x, t)
	if err != nil {
		return nil, err
	}
	b, d := x.Dims()
	return mat.NewDense(b, d, v), nil
}

func (n *Net) scalarFnAt(slot **model.Exec, fn ScalarFn, x *mat.Dense, t float64) ([]float64, error) {
	e, err := n.cached(slot, EpsFn(fn))
	if err != nil {
		return nil, err
	}
	return n.scalarAt(e, x, t)
}

// cached compiles fn into *slot on first use.
func (n *Net) cached(slot **model.Exec, fn EpsFn) (*model.Exec, error) {
	if *slot == nil {
		e, err := n.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node { return fn(scope, in[0], in[1], in[2]) })
		if err != nil {
			return nil, err
		}
		*slot = e
	}
	return *slot, nil
}

// scalarAt runs a compiled graph of (x, α, σ) at time t and returns its flat output.
func (n *Net) scalarAt(exec *model.Exec, x *mat.Dense, t float64) ([]float64, error) {
	b, _, a, s, err := n.batchAt(x, nil, t)
	if err != nil {
		return nil, err
	}
	dt := n.DType
	res, err := exec.Exec(matrix(dt, x), filled(dt, b, a), filled(dt, b, s))
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return flat(res[0]), nil
}

// batchAt checks a batch (and its vectors v, nil for none) and returns its
// size, its dimension and the schedule's α, σ at t: the prologue of every
// estimator.
func (n *Net) batchAt(x, v *mat.Dense, t float64) (b, d int, a, s float64, err error) {
	if b, d, err = checkBatch(x, v); err != nil {
		return 0, 0, 0, 0, err
	}
	c, err := schedule.At(n.Schedule, t)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("access: %w", err)
	}
	return b, d, c.Alpha, c.Sigma, nil
}

// exec builds a model.Exec whose graph function takes a slice of inputs.
func (n *Net) exec(fn func(scope *model.Scope, in []*graph.Node) *graph.Node) (*model.Exec, error) {
	if n.Store == nil {
		n.Store = model.NewStore()
	}
	return model.NewExec(n.Backend, n.Store, fn)
}
