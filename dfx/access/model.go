package access

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// NetModel is a network as a score.Model: ε_θ from Net (its native output;
// the score and denoiser by Tweedie when asked) and, when asked, the trace
// from Trace. It is the one adapter from a network to the samplers and
// the PF-ODE (dfx/pfode), the likelihood ODE (dfx/likelihood) and guided
// sampling (dfx/adjoint); its options are what those need of a network:
// classifier-free guidance (Guidance) and ε_θ fused with a one-pass trace
// (Fused).
type NetModel struct {
	Net *Net
	// Trace answers score.WantTrace (nil: the model has no trace).
	Trace score.TraceEstimator
	// PerCall bounds the points of one Trace call (≤ 0: all at once), e.g.
	// DefaultMaxRows / d for the d VJPs a point of VJPTrace costs.
	PerCall int
	// Fused evaluates ε_θ and a one-pass Trace on Net (DF-TM, centred
	// DF-TM) in one graph at every evaluation, the trace dropped when not
	// asked: one ε_θ pass where ε_θ and the trace take two. Other traces
	// ignore it.
	Fused bool
	// Fisher, if set, answers score.WantFisher with the d×d matrix of
	// this operator at each point (OperatorMatrix: d products a point) as
	// score.Eval.Jacobian, e.g. the VJP operator's F_θ = (1/σ) ∂ε̂/∂x,
	// which a network does not make symmetric: what the variational
	// equation of the OT test (dfx/pfode's Jacobian) needs of a network.
	Fisher score.FisherOperator
	// Guidance, if set, makes ε the classifier-free guided ε̃ of
	// Net.GuidedEpsAt (each row's class and scale); the model then has no
	// trace.
	Guidance *Guidance
}

// Guidance is classifier-free guidance with fixed per-row classes and
// scales (GuidedEpsGraph's convention: s = 0 unconditional, s = 1
// conditional, s > 1 guided); a model with it takes exactly len(Class) rows.
type Guidance struct {
	Class []int
	Scale []float64
}

// fusedTrace is a trace that shares the graph of ε_θ (scalarTrace).
type fusedTrace interface {
	netOf() *Net
	epsAndTrace(c schedule.Coefficients, x *mat.Dense) (*mat.Dense, []float64, error)
}

// EpsTracer is a trace estimator that computes ε_θ on its way to the
// trace, e.g. a mixture skip's control variate, whose host evaluation of
// the skip and graph of the residual give ε̂ = skip + residual
// (models.SkipHutchinsonTrace). NetModel takes ε from it whenever the
// trace is asked and the estimator runs on the model's Net, instead of a
// forward pass of its own.
type EpsTracer interface {
	score.TraceEstimator
	// EpsNet is the Net whose ε_θ the estimator computes.
	EpsNet() *Net
	// EpsAndTraceContext is ε_θ [B, d] and the trace [B] at x, stopping
	// with ctx's error once ctx is done.
	EpsAndTraceContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense) (*mat.Dense, []float64, error)
}

// Eval implements score.Model. The Fisher matrices are available with
// Fisher (else score.WantFisher is an error).
func (m NetModel) Eval(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return m.EvalContext(context.Background(), c, x, want)
}

// EvalContext implements score.ContextModel: the trace stops between its
// calls (PerCall points, and inside an estimator that can) with ctx's
// error once ctx is done.
func (m NetModel) EvalContext(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	if want&score.WantFisher != 0 && (m.Fisher == nil || m.Guidance != nil) {
		return nil, fmt.Errorf("access: a network model has no Fisher matrices (set NetModel.Fisher to a FisherOperator)")
	}
	if want&score.WantTrace != 0 && (m.Trace == nil || m.Guidance != nil) {
		return nil, fmt.Errorf("access: the network model has no trace estimator")
	}
	var ev *score.Eval
	var err error
	f, fused := m.Trace.(fusedTrace)
	et, epsTracer := m.Trace.(EpsTracer)
	switch {
	case m.Guidance != nil:
		ev = &score.Eval{}
		ev.Eps, err = m.Net.GuidedEpsAt(c, x, m.Guidance.Class, m.Guidance.Scale)
	case want&score.WantTrace != 0 && epsTracer && et.EpsNet() == m.Net:
		ev, err = m.epsTracerInChunks(ctx, et, c, x)
	case m.Fused && fused && f.netOf() == m.Net:
		ev = &score.Eval{}
		if ev.Eps, ev.Trace, err = f.epsAndTrace(c, x); want&score.WantTrace == 0 {
			ev.Trace = nil
		}
	default:
		ev, err = m.epsAndTrace(ctx, c, x, want)
	}
	if err != nil {
		return nil, err
	}
	if err := ev.Fill(c, x, want); err != nil {
		return nil, err
	}
	if want&score.WantFisher != 0 {
		if ev.Jacobian, err = OperatorMatrix(m.Fisher, score.State{At: c, X: x, Denoiser: ev.Denoiser}); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// epsAndTrace is ε_θ from Net and, as want asks, the trace from Trace.
func (m NetModel) epsAndTrace(ctx context.Context, c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	eps, err := m.Net.EpsAt(c, x)
	if err != nil {
		return nil, err
	}
	ev := &score.Eval{Eps: eps}
	if want&score.WantTrace != 0 {
		if ev.Trace, err = TraceInChunksContext(ctx, m.Trace, c, x, m.PerCall); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

// epsTracerInChunks is ε_θ and the trace from et, PerCall points a call
// (as TraceInChunksContext: a call's points share one probe stream).
func (m NetModel) epsTracerInChunks(ctx context.Context, et EpsTracer, c schedule.Coefficients, x *mat.Dense) (*score.Eval, error) {
	b, d := x.Dims()
	per := m.PerCall
	if per <= 0 || per >= b {
		per = b
	}
	ev := &score.Eval{Eps: mat.NewDense(b, d, nil), Trace: make([]float64, 0, b)}
	for first := 0; first < b; first += per {
		end := min(first+per, b)
		eps, tr, err := et.EpsAndTraceContext(ctx, c, mat.DenseCopyOf(x.Slice(first, end, 0, d)))
		if err != nil {
			return nil, err
		}
		ev.Eps.Slice(first, end, 0, d).(*mat.Dense).Copy(eps)
		ev.Trace = append(ev.Trace, tr...)
	}
	return ev, nil
}

// RowsPerPoint is the graph rows one point of est's trace takes, for
// bounding a call's memory: d for the exact VJP trace, K for a
// Hutchinson-type estimator (of a control variate, its residual's), 1 for
// a one-pass estimator (DF-TM, the centred DF-TM, closed forms).
func RowsPerPoint(est score.TraceEstimator, d int) int {
	switch e := est.(type) {
	case *VJPTrace:
		return d
	case *Hutchinson:
		return e.K
	case *HutchPP:
		return e.M
	case ControlVariate:
		return RowsPerPoint(e.Residual, d)
	case interface{ Probes() int }: // a Hutchinson-type estimator of another package
		return e.Probes()
	}
	return 1
}

// TraceInChunks is est's trace of the rows of x, perCall rows a call (≤ 0:
// all at once).
func TraceInChunks(est score.TraceEstimator, c schedule.Coefficients, x *mat.Dense, perCall int) ([]float64, error) {
	return TraceInChunksContext(context.Background(), est, c, x, perCall)
}

// TraceInChunksContext is TraceInChunks that stops between calls (and
// inside one, where est is a score.ContextTraceEstimator) with ctx's error
// once ctx is done.
func TraceInChunksContext(ctx context.Context, est score.TraceEstimator, c schedule.Coefficients, x *mat.Dense, perCall int) ([]float64, error) {
	b, d := x.Dims()
	if perCall <= 0 || perCall >= b {
		return score.TraceContext(ctx, est, c, x)
	}
	tr := make([]float64, 0, b)
	for first := 0; first < b; first += perCall {
		end := min(first+perCall, b)
		part, err := score.TraceContext(ctx, est, c, mat.DenseCopyOf(x.Slice(first, end, 0, d)))
		if err != nil {
			return nil, err
		}
		tr = append(tr, part...)
	}
	return tr, nil
}
