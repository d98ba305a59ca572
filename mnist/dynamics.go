package mnist

import (
	"context"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// fused holds the unconditional network's one-pass traces, DF-TM and
// centred DF-TM, compiled once: each is evaluated beside ε_θ in one graph
// (access.NetModel's Fused), so that the likelihood ODE with DF-TM costs
// one ε-network and one t_θ pass per evaluation, not two ε passes.
type fused struct {
	net   *access.Net
	dftm  *access.DFTM
	dftmc *access.DFTMCentred
}

func newFused(net *access.Net) (*fused, error) {
	dftm, err := access.NewDFTM(net)
	if err != nil {
		return nil, err
	}
	dftmc, err := access.NewDFTMCentred(net)
	if err != nil {
		return nil, err
	}
	return &fused{net: net, dftm: dftm, dftmc: dftmc}, nil
}

// traceKind selects the trace of a likelihood run.
type traceKind int

const (
	traceDFTM traceKind = iota
	traceDFTMC
	traceEstimator // a trace estimator (VJP, Hutchinson, Hutch++)
)

// dynamics is the unconditional network with the chosen trace as a
// score.Model: access.NetModel, fused with DF-TM or DF-TM-c, or with est.
type dynamics struct {
	f    *fused
	kind traceKind
	est  score.TraceEstimator
}

// model is the access.NetModel that d stands for.
func (d dynamics) model() access.NetModel {
	switch d.kind {
	case traceDFTM:
		return access.NetModel{Net: d.f.net, Trace: d.f.dftm, Fused: true}
	case traceDFTMC:
		return access.NetModel{Net: d.f.net, Trace: d.f.dftmc, Fused: true}
	}
	return access.NetModel{Net: d.f.net, Trace: d.est}
}

// Eval implements score.Model.
func (d dynamics) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return d.model().Eval(c, x, want)
}

// EvalContext implements score.ContextModel: a trace estimator's trace
// stops between its graph calls once ctx is done.
func (d dynamics) EvalContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return d.model().EvalContext(ctx, c, x, want)
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
