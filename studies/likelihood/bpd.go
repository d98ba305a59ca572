package likelihood

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxlikelihood "github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
)

// BPDMethod is one trace method's likelihood on a set of test images.
type BPDMethod struct {
	Method       string
	Solver       string
	Images       int
	MeanBPD      float64
	SEBPD        float64 // standard error of the mean
	SecsPerImage float64
	NFE          int     // evaluations per batch
	RelNLLErr    float64 // mean |NLL − NLL_vjp| / |NLL_vjp| per image (comparison set only)
	MaxRelNLLErr float64
	AbsBPDErr    float64 // mean |bpd − bpd_vjp| per image
}

// ConvRow is DF-TM's mean bpd on the comparison images under one solver.
type ConvRow struct {
	Solver       string
	NFE          int
	MeanBPD      float64
	DiffToRef    float64 // mean |bpd − bpd_ref| per image against the finest fixed-step run
	SecsPerImage float64
}

// BPDResult is the likelihood of the dequantised test set.
type BPDResult struct {
	Start   float64 // s: the data likelihood's start time
	PaperT1 float64 // t₁: the paper protocol's start time
	// DataCompare: the traces side by side from s (DataImages images);
	// PaperCompare: from t₁ (CompareImages images), the paper's protocol.
	DataCompare, PaperCompare []BPDMethod
	DataBPD                   BPDMethod // Hutchinson-16, Heun from s: the data bpd beside FFJORD's
	Conv                      []ConvRow // DF-TM from t₁ under finer solvers
	Whole                     BPDMethod // DF-TM, paper protocol, on BPDImages
}

// bpd computes bits per dimension of dequantised test images:
//   - the trace methods side by side on identical Euler trajectories (the
//     trace does not change x, so their differences are the traces' alone;
//     the exact VJP trace costs d VJPs per evaluation), once from s (the
//     data likelihood, where DF-TM's α²/σ⁴ amplification is catastrophic)
//     and once from the paper protocol's t₁;
//   - the data bpd by Hutchinson-16 with Heun from s;
//   - DF-TM's convergence in the solver from t₁, and DF-TM (paper protocol)
//     on BPDImages.
func (s study) bpd(ctx context.Context) (*BPDResult, error) {
	n, cfg := s.nets.Net, s.cfg
	f, err := access.NewFused(n)
	if err != nil {
		return nil, err
	}
	tr, err := newTraces(n, s.p.Dim, cfg.Seed)
	if err != nil {
		return nil, err
	}
	paper, fine := protocols(s.p.Schedule, cfg)
	res := &BPDResult{Start: cfg.BPDStart, PaperT1: paper.T0}
	xs, err := s.p.Dequantized(ctx, max(cfg.BPDImages, cfg.CompareImages, cfg.DataImages), cfg.Seed)
	if err != nil {
		return nil, err
	}
	rows := func(k int) *mat.Dense { return xs.Slice(0, k, 0, s.p.Dim).(*mat.Dense) }
	r := bpdRunner{ctx: ctx, log: s.log, prefix: s.p.Name, q: s.quant()}
	est := func(e score.TraceEstimator) access.FusedModel {
		return access.FusedModel{F: f, Trace: access.FusedEstimator, Est: e}
	}
	dtm := access.FusedModel{F: f, Trace: access.FusedDFTM}
	methods := []bpdTrace{
		{"vjp-exact", est(tr.vjp), 4}, {"hutchinson-1", est(tr.h1), 64}, {"hutchinson-16", est(tr.h16), 64},
		{"df-tm", dtm, 64},
	}
	if n.Nu != nil {
		methods = append(methods, bpdTrace{"df-tm-c", access.FusedModel{F: f, Trace: access.FusedDFTMC}, 64})
	}
	dataLC := dfxlikelihood.Config{Schedule: n.Schedule, T0: cfg.BPDStart, Steps: cfg.CompareSteps, Solver: dfxlikelihood.Euler}
	dataLabel := fmt.Sprintf("euler %d steps from s = %g", cfg.CompareSteps, cfg.BPDStart)
	if res.DataCompare, err = r.compare(methods, rows(cfg.DataImages), dataLC, dataLabel); err != nil {
		return nil, err
	}
	paperLabel := fmt.Sprintf("paper: euler %d steps from t₁ = %.3g", paper.Steps, paper.T0)
	if res.PaperCompare, err = r.compare(methods, rows(cfg.CompareImages), paper, paperLabel); err != nil {
		return nil, err
	}
	// the data bpd by Hutchinson-16 with a finer solver from s
	hs := dfxlikelihood.Config{Schedule: n.Schedule, T0: cfg.BPDStart, Steps: cfg.DataSteps, Solver: dfxlikelihood.Heun}
	fmt.Fprintf(s.log, "%s: data bpd of %d test images with hutchinson-16 (Heun %d steps from s)\n", s.p.Name, cfg.CompareImages, cfg.DataSteps)
	h16 := bpdTrace{"hutchinson-16", est(tr.h16), 64}
	if res.DataBPD, _, err = r.method(h16, rows(cfg.CompareImages), hs, fmt.Sprintf("heun %d steps from s = %g", cfg.DataSteps, cfg.BPDStart)); err != nil {
		return nil, err
	}
	dopri := dfxlikelihood.Config{Schedule: n.Schedule, T0: paper.T0, RTol: cfg.ConvRTol}
	if res.Conv, err = r.convergence(dtm, rows(cfg.CompareImages), cfg.ConvSteps, fine, dopri); err != nil {
		return nil, err
	}
	// the whole (or a part of the) test set with DF-TM, paper protocol
	fmt.Fprintf(s.log, "%s: bpd of %d test images with DF-TM (paper protocol)\n", s.p.Name, cfg.BPDImages)
	if res.Whole, _, err = r.method(bpdTrace{"df-tm", dtm, 64}, rows(cfg.BPDImages), paper, paperLabel); err != nil {
		return nil, err
	}
	return res, nil
}

// bpdTrace is a named likelihood dynamics (a trace method) and the batch
// it runs in.
type bpdTrace struct {
	name  string
	dyn   dfxlikelihood.Dynamics
	batch int
}

// bpdRunner integrates the likelihood ODE of test images batch by batch.
type bpdRunner struct {
	ctx    context.Context
	log    io.Writer
	prefix string                      // of the log lines
	q      *dfxlikelihood.Quantization // the pixel grid of the bpd
}

// bpd is the bits per dimension of every row of x, the NFE of a batch and
// the seconds per image.
func (r bpdRunner) bpd(x *mat.Dense, dyn dfxlikelihood.Dynamics, lc dfxlikelihood.Config, batch int) ([]float64, int, float64, error) {
	b, d := x.Dims()
	var bpd []float64
	nfe := 0
	start := time.Now()
	for lo := 0; lo < b; lo += batch {
		hi := min(lo+batch, b)
		res, err := dfxlikelihood.LogProbContext(r.ctx, x.Slice(lo, hi, 0, d).(*mat.Dense), dyn, lc)
		if err != nil {
			return nil, 0, 0, err
		}
		v, err := dfxlikelihood.BitsPerDim(res.LogProb, d, r.q)
		if err != nil {
			return nil, 0, 0, err
		}
		bpd = append(bpd, v...)
		nfe = res.Evals
	}
	return bpd, nfe, time.Since(start).Seconds() / float64(b), nil
}

// method is one trace method's mean bpd over the rows of x, and the
// per-image bpd.
func (r bpdRunner) method(m bpdTrace, x *mat.Dense, lc dfxlikelihood.Config, solver string) (BPDMethod, []float64, error) {
	bpd, nfe, secs, err := r.bpd(x, m.dyn, lc, m.batch)
	if err != nil {
		return BPDMethod{}, nil, err
	}
	bm := BPDMethod{Method: m.name, Solver: solver, Images: len(bpd), SecsPerImage: secs, NFE: nfe}
	bm.MeanBPD, bm.SEBPD = stats.MeanSE(bpd)
	return bm, bpd, nil
}

// compare runs every method on x with one solver; the errors are relative
// to the first method's.
func (r bpdRunner) compare(methods []bpdTrace, x *mat.Dense, lc dfxlikelihood.Config, label string) ([]BPDMethod, error) {
	var out []BPDMethod
	var ref []float64
	for _, m := range methods {
		fmt.Fprintf(r.log, "%s: bpd of %d test images with %s (%s)\n", r.prefix, x.RawMatrix().Rows, m.name, label)
		bm, bpd, err := r.method(m, x, lc, label)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		if ref == nil {
			ref = bpd
		} else {
			for i := range bpd { // relative error of the NLL (bpd without the offset)
				nl, nlRef := bpd[i]-r.q.Offset(), ref[i]-r.q.Offset()
				e := math.Abs(nl-nlRef) / math.Abs(nlRef)
				bm.RelNLLErr += e / float64(len(bpd))
				bm.MaxRelNLLErr = math.Max(bm.MaxRelNLLErr, e)
				bm.AbsBPDErr += math.Abs(bpd[i]-ref[i]) / float64(len(bpd))
			}
		}
		out = append(out, bm)
	}
	return out, nil
}

// convergence is DF-TM's bpd with the fixed-step solver fine at each
// number of steps and with the adaptive dopri, each row with its mean
// distance from the dopri5 bpd.
func (r bpdRunner) convergence(dtm dfxlikelihood.Dynamics, x *mat.Dense, steps []int, fine, dopri dfxlikelihood.Config) ([]ConvRow, error) {
	var rows []ConvRow
	var conv [][]float64
	for _, st := range steps {
		lc := fine
		lc.Steps = st
		bpd, nfe, secs, err := r.bpd(x, dtm, lc, 64)
		if err != nil {
			return nil, err
		}
		m, _ := stats.MeanSE(bpd)
		rows = append(rows, ConvRow{Solver: fmt.Sprintf("heun %d from t₁", st), NFE: nfe, MeanBPD: m, SecsPerImage: secs})
		conv = append(conv, bpd)
	}
	bpd, nfe, secs, err := r.bpd(x, dtm, dopri, 64)
	if err != nil {
		return nil, err
	}
	m, _ := stats.MeanSE(bpd)
	rows = append(rows, ConvRow{Solver: fmt.Sprintf("dopri5 rtol %g from t₁", dopri.RTol), NFE: nfe, MeanBPD: m, SecsPerImage: secs})
	conv = append(conv, bpd)
	refConv := conv[len(conv)-1] // the adaptive solve is the reference
	for i := range rows {
		for k := range refConv {
			rows[i].DiffToRef += math.Abs(conv[i][k]-refConv[k]) / float64(len(refConv))
		}
	}
	return rows, nil
}
