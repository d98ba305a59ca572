package likelihood

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/timing"
)

// TimingRow is one method at one batch size: the median wall time of one
// call over interleaved rounds.
type TimingRow struct {
	Kind    string // "trace" or "operator"
	Method  string
	Batch   int
	Seconds float64 // median per call (per batch)
	Rounds  int
	Note    string
}

// TimingResult is the Table 1 analogue.
type TimingResult struct {
	T    float64 // the time of the queries
	Rows []TimingRow
}

// Get returns the row of a method at a batch size (nil if not measured).
func (r *TimingResult) Get(method string, batch int) *TimingRow {
	for i := range r.Rows {
		if r.Rows[i].Method == method && r.Rows[i].Batch == batch {
			return &r.Rows[i]
		}
	}
	return nil
}

// timing times every trace estimator and F·v operator at each of
// TimingBatches on noisy training images at t = 0.5, in interleaved rounds
// (each method once per round, after a warm-up call that compiles its
// graph); train are the training rows [N, d].
func (s study) timing(ctx context.Context, train *mat.Dense) (*TimingResult, error) {
	const t = 0.5
	res := &TimingResult{T: t}
	n, cfg, d := s.nets.Net, s.cfg, s.p.Dim
	tr, err := newTraces(n, d, cfg.Seed)
	if err != nil {
		return nil, err
	}
	at, err := schedule.At(n.Schedule, t)
	if err != nil {
		return nil, err
	}
	for _, b := range cfg.TimingBatches {
		x0 := mat.DenseCopyOf(train.Slice(0, b, 0, d))
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(b)))
		x, v := mat.NewDense(b, d, nil), mat.NewDense(b, d, nil)
		for i := range b {
			for j := range d {
				x.Set(i, j, at.Alpha*x0.At(i, j)+at.Sigma*rng.NormFloat64())
				v.Set(i, j, rng.NormFloat64())
			}
		}
		ms, err := timedMethods(n, tr, at, x0, x, v, d)
		if err != nil {
			return nil, err
		}
		if b == 64 {
			if cfg.ExactAt64 {
				ms[0].Rounds = 1
				ms[0].note += "; one round (≈ 50 000 VJPs)"
			} else {
				ms = ms[1:]
			}
		}
		cases := make([]timing.Case, len(ms))
		for i, m := range ms {
			cases[i] = m.Case
		}
		times, err := timing.Interleaved(ctx, cfg.TimingRounds, cases)
		if err != nil {
			return nil, err
		}
		for i, m := range ms {
			res.Rows = append(res.Rows, TimingRow{Kind: m.kind, Method: m.Name, Batch: b, Seconds: times[i].Median(0), Rounds: times[i].Rounds(), Note: m.note})
		}
	}
	return res, nil
}

// timedMethod is one row of the timing table: its kind, its note and
// what it calls.
type timedMethod struct {
	timing.Case
	kind, note string
}

// timedMethods are the rows of Table 1 at the queries x [B, d] (clean
// images x0, directions v) at coefficients at.
func timedMethods(n *access.Net, tr *traces, at schedule.Coefficients, x0, x, v *mat.Dense, d int) ([]timedMethod, error) {
	ybar, err := n.DenoiserAt(at, x)
	if err != nil {
		return nil, err
	}
	traceOf := func(e score.TraceEstimator) func() ([]float64, error) {
		return timing.Wall(func() error { _, err := e.Trace(at, x); return err })
	}
	m := func(kind, name string, run func() ([]float64, error), note string) timedMethod {
		return timedMethod{Case: timing.Case{Name: name, Run: run}, kind: kind, note: note}
	}
	ms := []timedMethod{
		m("trace", "vjp-exact", traceOf(tr.vjp), fmt.Sprintf("d = %d VJPs per point, batched", d)),
		m("trace", "hutchinson-1", traceOf(tr.h1), "1 Rademacher probe"),
		m("trace", "hutchinson-16", traceOf(tr.h16), "16 Rademacher probes"),
		m("trace", "hutch++-48", traceOf(tr.hpp), "48 matvecs (16 sketch + 16 + 16)"),
		m("trace", "df-tm", traceOf(tr.dftm), "ε-net + t_θ forward"),
		m("trace", "df-tm-c", traceOf(tr.dftmc), "ν_θ forward"),
		m("operator", "forward", timing.Wall(func() error { _, err := n.EpsAt(at, x); return err }), "one ε-network pass (reference)"),
		m("operator", "vjp-matvec", timing.Wall(func() error { _, err := tr.matvec.Apply(score.State{At: at, X: x}, v); return err }), "one VJP (eq. Adjoint_VJP)"),
		m("operator", "df-ea", timing.Wall(func() error { _, err := tr.endpoint.Apply(score.State{At: at, X: x, Endpoint: x0}, v); return err }),
			"standalone: ε-net forward + rank-2 update"),
		m("operator", "df-ea-marginal", timing.Wall(func() error { _, err := access.DFEAApply(ybar, x0, v, at.Alpha, at.Sigma); return err }),
			"inside a sampler step: ȳ_θ already computed"),
	}
	if tr.dftmc == nil {
		ms = slices.DeleteFunc(ms, func(m timedMethod) bool { return m.Name == "df-tm-c" })
	}
	return ms, nil
}

// traces are the trace estimators the study compares, compiled once per
// part on the unconditional network.
type traces struct {
	vjp      *access.VJPTrace
	h1, h16  *access.Hutchinson
	hpp      *access.HutchPP
	dftm     *access.DFTM
	dftmc    *access.DFTMCentred
	matvec   *access.VJPMatVec
	endpoint *access.DFEA
}

// newTraces compiles every estimator on n (samples of dimension d): the
// exact VJP trace (d VJPs, one sample's, per call), Hutchinson with 1 and
// 16 Rademacher probes, Hutch++ with 48 matvecs, DF-TM, DF-TM-c (nil
// without ν_θ), the VJP matvec and DF-EA.
func newTraces(n *access.Net, d int, seed uint64) (*traces, error) {
	var tr traces
	var err error
	steps := []func() error{
		// one image's VJPs per call: at batch 4 this measured 4× faster than
		// 4 096-row calls on the Go backend (the per-row cost of a VJP grows
		// with the call's size)
		func() error { tr.vjp, err = access.NewVJPTrace(n, d); return err },
		func() error { tr.h1, err = access.NewHutchinson(n, 1, access.Rademacher, seed); return err },
		func() error { tr.h16, err = access.NewHutchinson(n, 16, access.Rademacher, seed); return err },
		func() error { tr.hpp, err = access.NewHutchPP(n, 48, seed); return err },
		func() error { tr.dftm, err = access.NewDFTM(n); return err },
		func() error { // optional: a researcher may train t_θ alone
			if n.Nu != nil {
				tr.dftmc, err = access.NewDFTMCentred(n)
			}
			return err
		},
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
