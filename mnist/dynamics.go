package mnist

import (
	"fmt"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// fused evaluates, in one graph, the unconditional ε_θ and the DF-TM and
// centred DF-TM traces at (x, t): the likelihood ODE with DF-TM costs one
// ε-network and one t_θ pass per evaluation, not two ε passes.
type fused struct {
	net  *access.Net
	exec *model.Exec
}

func newFused(net *access.Net) (*fused, error) {
	e, err := model.NewExec(net.Backend, net.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		x, a, s := in[0], in[1], in[2]
		eps := net.Eps(scope, x, a, s)
		d := float64(x.Shape().Dimensions[1])
		a2, s2 := graph.InsertAxes(a, -1), graph.InsertAxes(s, -1)
		ybar := graph.Div(graph.Sub(x, graph.Mul(s2, eps)), a2)
		sq := graph.Square(s)
		c := graph.Div(graph.Square(a), graph.Square(sq))
		inner := graph.Sub(graph.MulScalar(net.T(scope, x, a, s), d), graph.ReduceSum(graph.Square(ybar), -1))
		dftm := graph.Sub(graph.MulScalar(graph.Reciprocal(sq), d), graph.Mul(c, inner))
		nu := graph.MulScalar(graph.Div(graph.OneMinus(net.Nu(scope, x, a, s)), sq), d)
		return []*graph.Node{eps, dftm, nu}
	})
	if err != nil {
		return nil, err
	}
	return &fused{net: net, exec: e}, nil
}

// eval returns ε_θ [B, d] and the DF-TM and centred DF-TM traces [B].
func (f *fused) eval(x *mat.Dense, t float64) (*mat.Dense, []float64, []float64, error) {
	c, err := schedule.At(f.net.Schedule, t)
	if err != nil {
		return nil, nil, nil, err
	}
	b, d := x.Dims()
	xs := make([]float32, 0, b*d)
	for i := range b {
		for _, v := range x.RawRowView(i) {
			xs = append(xs, float32(v))
		}
	}
	al, sg := make([]float32, b), make([]float32, b)
	for i := range al {
		al[i], sg[i] = float32(c.Alpha), float32(c.Sigma)
	}
	out, err := f.exec.Exec(tensors.FromFlatDataAndDimensions(xs, b, d), tensors.FromFlatDataAndDimensions(al, b), tensors.FromFlatDataAndDimensions(sg, b))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mnist: %w", err)
	}
	conv := func(t *tensors.Tensor) []float64 {
		defer t.MustFinalizeAll()
		f := tensors.MustCopyFlatData[float32](t)
		o := make([]float64, len(f))
		for i, v := range f {
			o[i] = float64(v)
		}
		return o
	}
	return mat.NewDense(b, d, conv(out[0])), conv(out[1]), conv(out[2]), nil
}

// traceKind selects the trace of a likelihood run.
type traceKind int

const (
	traceDFTM traceKind = iota
	traceDFTMC
	traceEstimator // an access trace estimator (VJP, Hutchinson, Hutch++)
)

// dynamics is likelihood.Dynamics (and pfode.Model) of the unconditional
// network with the chosen trace.
type dynamics struct {
	f    *fused
	kind traceKind
	est  access.TraceEstimator
}

// Eval implements likelihood.Dynamics.
func (d dynamics) Eval(x *mat.Dense, t float64) (*mat.Dense, []float64, error) {
	eps, tr, nu, err := d.f.eval(x, t)
	if err != nil {
		return nil, nil, err
	}
	switch d.kind {
	case traceDFTMC:
		tr = nu
	case traceEstimator:
		if tr, err = d.est.Trace(x, t); err != nil {
			return nil, nil, err
		}
	}
	sigma := d.f.net.Schedule.Sigma(t)
	eps.Scale(-1/sigma, eps) // score = −ε/σ
	return eps, tr, nil
}

// model adapts dynamics to pfode's model contract (for sampling with the
// log-density carried along).
func (d dynamics) model() pfode.Model {
	return pfode.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, _ pfode.Want) (*pfode.Eval, error) {
		score, tr, err := d.Eval(x, c.T)
		if err != nil {
			return nil, err
		}
		return &pfode.Eval{Score: score, Trace: tr}, nil
	})
}

var _ likelihood.Dynamics = dynamics{}

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
		func() error { tr.endpoint, err = access.NewDFEA(n, nil); return err },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	return &tr, nil
}
