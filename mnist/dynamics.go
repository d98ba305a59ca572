package mnist

import (
	"context"
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

// fused evaluates, in one graph, the unconditional ε_θ and the DF-TM and
// centred DF-TM traces at (x, c): the likelihood ODE with DF-TM costs one
// ε-network and one t_θ pass per evaluation, not two ε passes.
type fused struct {
	net  *access.Net
	exec *model.Exec
}

func newFused(net *access.Net) (*fused, error) {
	e, err := model.NewExec(net.Backend, net.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		x, a, s := in[0], in[1], in[2]
		eps := net.Eps(scope, x, a, s)
		ybar := access.DenoiserFromEpsGraph(x, eps, a, s)
		dftm := access.DFTMTraceOf(ybar, net.T(scope, x, a, s), a, s)
		nu := access.DFTMCentredTraceOf(net.Nu(scope, x, a, s), s, x.Shape().Dimensions[1])
		return []*graph.Node{eps, dftm, nu}
	})
	if err != nil {
		return nil, err
	}
	return &fused{net: net, exec: e}, nil
}

// eval returns ε_θ [B, d] and the DF-TM and centred DF-TM traces [B].
func (f *fused) eval(c schedule.Coefficients, x *mat.Dense) (*mat.Dense, []float64, []float64, error) {
	b, d := x.Dims()
	out, err := f.exec.Exec(tensormat.FromMatrix(dtypes.Float32, x), tensormat.Filled(dtypes.Float32, b, c.Alpha), tensormat.Filled(dtypes.Float32, b, c.Sigma))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mnist: %w", err)
	}
	return tensormat.Dense(out[0], b, d), tensormat.Values(out[1]), tensormat.Values(out[2]), nil
}

// traceKind selects the trace of a likelihood run.
type traceKind int

const (
	traceDFTM traceKind = iota
	traceDFTMC
	traceEstimator // a trace estimator (VJP, Hutchinson, Hutch++)
)

// dynamics is the unconditional network with the chosen trace as a
// score.Model (ε native, its trace from the fused graph or est).
type dynamics struct {
	f    *fused
	kind traceKind
	est  score.TraceEstimator
}

// Eval implements score.Model.
func (d dynamics) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return d.EvalContext(context.Background(), c, x, want)
}

// EvalContext implements score.ContextModel: a trace estimator's trace
// stops between its graph calls once ctx is done.
func (d dynamics) EvalContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	if want&score.WantFisher != 0 {
		return nil, fmt.Errorf("mnist: the network model has no Fisher matrices")
	}
	eps, tr, nu, err := d.f.eval(c, x)
	if err != nil {
		return nil, err
	}
	switch d.kind {
	case traceDFTMC:
		tr = nu
	case traceEstimator:
		if tr, err = score.TraceContext(ctx, d.est, c, x); err != nil {
			return nil, err
		}
	}
	ev := &score.Eval{Eps: eps, Trace: tr}
	return ev, ev.Fill(c, x, want)
}

var _ score.ContextModel = dynamics{}

// traces are the trace estimators the experiment compares, compiled once
// per part on the unconditional network.
type traces struct {
	vjp      *access.VJPTrace
	h1, h16  *access.Hutchinson
	hpp      *access.HutchPP
	dftm     *access.DFTM
	dftmc    *access.DFTMCentred
	matvec   *access.VJPMatVec
	endpoint *access.DFEA
}

// newTraces compiles every estimator: the exact VJP trace (chunks of 4096
// VJPs), Hutchinson with 1 and 16 Rademacher probes, Hutch++ with 48
// matvecs, DF-TM, DF-TM-c, the VJP matvec and DF-EA.
func newTraces(n *access.Net, seed uint64) (*traces, error) {
	var tr traces
	var err error
	steps := []func() error{
		// 784 rows (one image's VJPs) per call: at batch 4 this measured 4×
		// faster than 4 096-row calls on the Go backend (the per-row cost of
		// a VJP grows with the call's size: see README, Backends and performance).
		func() error { tr.vjp, err = access.NewVJPTrace(n, Dim); return err },
		func() error { tr.h1, err = access.NewHutchinson(n, 1, access.Rademacher, seed); return err },
		func() error { tr.h16, err = access.NewHutchinson(n, 16, access.Rademacher, seed); return err },
		func() error { tr.hpp, err = access.NewHutchPP(n, 48, seed); return err },
		func() error { tr.dftm, err = access.NewDFTM(n); return err },
		func() error { tr.dftmc, err = access.NewDFTMCentred(n); return err },
		func() error { tr.matvec, err = access.NewVJPMatVec(n); return err },
		func() error { tr.endpoint, err = access.NewDFEA(n); return err },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return &tr, nil
}
