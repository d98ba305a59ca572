package access

import (
	"context"
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// Fused evaluates, in one graph, ε_θ and the DF-TM and centred DF-TM
// traces of a Net at (x, c): the likelihood ODE with DF-TM then costs one
// ε-network and one t_θ pass per evaluation, not two ε passes.
type Fused struct {
	net  *Net
	exec *model.Exec
}

// NewFused compiles net's fused graph (net needs t_θ and ν_θ).
func NewFused(net *Net) (*Fused, error) {
	e, err := model.NewExec(net.Backend, net.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		x, a, s := in[0], in[1], in[2]
		eps := net.Eps(scope, x, a, s)
		ybar := DenoiserFromEpsGraph(x, eps, a, s)
		dftm := DFTMTraceOf(ybar, net.T(scope, x, a, s), a, s)
		nu := DFTMCentredTraceOf(net.Nu(scope, x, a, s), s, x.Shape().Dimensions[1])
		return []*graph.Node{eps, dftm, nu}
	})
	if err != nil {
		return nil, err
	}
	return &Fused{net: net, exec: e}, nil
}

// Eval returns ε_θ [B, d] and the DF-TM and centred DF-TM traces [B] at
// the rows of x [B, d].
func (f *Fused) Eval(c schedule.Coefficients, x *mat.Dense) (eps *mat.Dense, dftm, dftmc []float64, err error) {
	b, d := x.Dims()
	out, err := f.exec.Exec(tensormat.FromMatrix(dtypes.Float32, x), tensormat.Filled(dtypes.Float32, b, c.Alpha), tensormat.Filled(dtypes.Float32, b, c.Sigma))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("access: fused: %w", err)
	}
	return tensormat.Dense(out[0], b, d), tensormat.Values(out[1]), tensormat.Values(out[2]), nil
}

// FusedTrace selects the trace of a FusedModel.
type FusedTrace int

const (
	FusedDFTM      FusedTrace = iota // DF-TM from the fused graph
	FusedDFTMC                       // centred DF-TM from the fused graph
	FusedEstimator                   // the FusedModel's Est (VJP, Hutchinson, Hutch++)
)

// FusedModel is a Fused network with one trace as a score.Model: ε native,
// tr F from the fused graph or from Est.
type FusedModel struct {
	F     *Fused
	Trace FusedTrace
	Est   score.TraceEstimator
}

// Eval implements score.Model.
func (m FusedModel) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return m.EvalContext(context.Background(), c, x, want)
}

// EvalContext implements score.ContextModel: a trace estimator's trace
// stops between its graph calls once ctx is done.
func (m FusedModel) EvalContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	if want&score.WantFisher != 0 {
		return nil, fmt.Errorf("access: the network model has no Fisher matrices")
	}
	eps, tr, nu, err := m.F.Eval(c, x)
	if err != nil {
		return nil, err
	}
	switch m.Trace {
	case FusedDFTMC:
		tr = nu
	case FusedEstimator:
		if tr, err = score.TraceContext(ctx, m.Est, c, x); err != nil {
			return nil, err
		}
	}
	ev := &score.Eval{Eps: eps, Trace: tr}
	return ev, ev.Fill(c, x, want)
}

var _ score.ContextModel = FusedModel{}
