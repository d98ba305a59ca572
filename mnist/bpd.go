package mnist

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/internal/stats"
)

// Quant is 8-bit MNIST in [−1, 1]: bpd = −log₂ p/d + 7.
var Quant = likelihood.Quantization{Levels: 256, Lo: -1, Hi: 1}

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

// RunBPD computes bits per dimension of dequantised test images:
//   - the trace methods side by side on identical Euler trajectories (the
//     trace does not change x, so their differences are the traces' alone;
//     the exact VJP trace costs d = 784 VJPs per evaluation), once from s
//     (the data likelihood, where DF-TM's α²/σ⁴ amplification is
//     catastrophic) and once from the paper protocol's t₁;
//   - the data bpd by Hutchinson-16 with Heun from s;
//   - DF-TM's convergence in the solver from t₁, and DF-TM (paper protocol)
//     on BPDImages.
func RunBPD(ctx context.Context, nets *Networks, cfg Config, test *Set, log io.Writer) (*BPDResult, error) {
	n := nets.Net
	f, err := newFused(n)
	if err != nil {
		return nil, err
	}
	tr, err := newTraces(n, cfg.Seed)
	if err != nil {
		return nil, err
	}
	vjp, h1, h16 := tr.vjp, tr.h1, tr.h16
	paper, fine := protocols(cfg)
	res := &BPDResult{Start: cfg.BPDStart, PaperT1: paper.T0}
	xs, err := test.Dequantized(0, max(cfg.BPDImages, cfg.CompareImages, cfg.DataImages), cfg.Seed)
	if err != nil {
		return nil, err
	}
	rows := func(k int) *mat.Dense { return xs.Slice(0, k, 0, Dim).(*mat.Dense) }
	run := func(x *mat.Dense, dyn likelihood.Dynamics, lc likelihood.Config, batch int) ([]float64, int, float64, error) {
		b, _ := x.Dims()
		var bpd []float64
		nfe := 0
		start := time.Now()
		for lo := 0; lo < b; lo += batch {
			hi := min(lo+batch, b)
			r, err := likelihood.LogProbContext(ctx, x.Slice(lo, hi, 0, Dim).(*mat.Dense), dyn, lc)
			if err != nil {
				return nil, 0, 0, err
			}
			v, err := likelihood.BitsPerDim(r.LogProb, Dim, &Quant)
			if err != nil {
				return nil, 0, 0, err
			}
			bpd = append(bpd, v...)
			nfe = r.Evals
		}
		return bpd, nfe, time.Since(start).Seconds() / float64(b), nil
	}
	methods := []struct {
		name  string
		dyn   likelihood.Dynamics
		batch int
	}{
		{"vjp-exact", dynamics{f: f, kind: traceEstimator, est: vjp}, 4},
		{"hutchinson-1", dynamics{f: f, kind: traceEstimator, est: h1}, 64},
		{"hutchinson-16", dynamics{f: f, kind: traceEstimator, est: h16}, 64},
		{"df-tm", dynamics{f: f, kind: traceDFTM}, 64},
		{"df-tm-c", dynamics{f: f, kind: traceDFTMC}, 64},
	}
	compare := func(x *mat.Dense, lc likelihood.Config, label string) ([]BPDMethod, error) {
		var out []BPDMethod
		var ref []float64
		for _, m := range methods {
			fmt.Fprintf(log, "mnist: bpd of %d test images with %s (%s)\n", x.RawMatrix().Rows, m.name, label)
			bpd, nfe, secs, err := run(x, m.dyn, lc, m.batch)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.name, err)
			}
			bm := BPDMethod{Method: m.name, Solver: label, Images: len(bpd), SecsPerImage: secs, NFE: nfe}
			bm.MeanBPD, bm.SEBPD = stats.MeanSE(bpd)
			if ref == nil {
				ref = bpd
			} else {
				for i := range bpd { // relative error of the NLL (bpd without the offset)
					nl, nlRef := bpd[i]-Quant.Offset(), ref[i]-Quant.Offset()
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
	dataLC := likelihood.Config{Schedule: n.Schedule, T0: cfg.BPDStart, Steps: cfg.CompareSteps, Solver: likelihood.Euler}
	if res.DataCompare, err = compare(rows(cfg.DataImages), dataLC, fmt.Sprintf("euler %d steps from s = %g", cfg.CompareSteps, cfg.BPDStart)); err != nil {
		return nil, err
	}
	if res.PaperCompare, err = compare(rows(cfg.CompareImages), paper, fmt.Sprintf("paper: euler %d steps from t₁ = %.3g", paper.Steps, paper.T0)); err != nil {
		return nil, err
	}
	// the data bpd by Hutchinson-16 with a finer solver from s
	hs := likelihood.Config{Schedule: n.Schedule, T0: cfg.BPDStart, Steps: cfg.DataSteps, Solver: likelihood.Heun}
	fmt.Fprintf(log, "mnist: data bpd of %d test images with hutchinson-16 (Heun %d steps from s)\n", cfg.CompareImages, cfg.DataSteps)
	bpd, nfe, secs, err := run(rows(cfg.CompareImages), dynamics{f: f, kind: traceEstimator, est: h16}, hs, 64)
	if err != nil {
		return nil, err
	}
	res.DataBPD = BPDMethod{Method: "hutchinson-16", Solver: fmt.Sprintf("heun %d steps from s = %g", cfg.DataSteps, cfg.BPDStart), Images: len(bpd), SecsPerImage: secs, NFE: nfe}
	res.DataBPD.MeanBPD, res.DataBPD.SEBPD = stats.MeanSE(bpd)
	// DF-TM's convergence in the solver, from t₁
	dtm := dynamics{f: f, kind: traceDFTM}
	var conv [][]float64
	for _, st := range cfg.ConvSteps {
		lc := fine
		lc.Steps = st
		bpd, nfe, secs, err := run(rows(cfg.CompareImages), dtm, lc, 64)
		if err != nil {
			return nil, err
		}
		m, _ := stats.MeanSE(bpd)
		res.Conv = append(res.Conv, ConvRow{Solver: fmt.Sprintf("heun %d from t₁", st), NFE: nfe, MeanBPD: m, SecsPerImage: secs})
		conv = append(conv, bpd)
	}
	lc := likelihood.Config{Schedule: n.Schedule, T0: paper.T0, RTol: cfg.ConvRTol}
	bpd, nfe, secs, err = run(rows(cfg.CompareImages), dtm, lc, 64)
	if err != nil {
		return nil, err
	}
	m, _ := stats.MeanSE(bpd)
	res.Conv = append(res.Conv, ConvRow{Solver: fmt.Sprintf("dopri5 rtol %g from t₁", cfg.ConvRTol), NFE: nfe, MeanBPD: m, SecsPerImage: secs})
	conv = append(conv, bpd)
	refConv := conv[len(conv)-1] // the adaptive solve is the reference
	for i := range res.Conv {
		for k := range refConv {
			res.Conv[i].DiffToRef += math.Abs(conv[i][k]-refConv[k]) / float64(len(refConv))
		}
	}
	// the whole (or a part of the) test set with DF-TM, paper protocol
	fmt.Fprintf(log, "mnist: bpd of %d test images with DF-TM (paper protocol)\n", cfg.BPDImages)
	whole, nfe, secs, err := run(rows(cfg.BPDImages), dtm, paper, 64)
	if err != nil {
		return nil, err
	}
	res.Whole = BPDMethod{Method: "df-tm", Solver: fmt.Sprintf("paper: euler %d steps from t₁ = %.3g", paper.Steps, paper.T0), Images: len(whole), SecsPerImage: secs, NFE: nfe}
	res.Whole.MeanBPD, res.Whole.SEBPD = stats.MeanSE(whole)
	return res, nil
}
