package mnist

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
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
	Start      float64 // s
	Compare    []BPDMethod
	Conv       []ConvRow
	Whole      BPDMethod
	PerImage   []float64 // DF-TM bpd of each comparison image
	PerImageEx []float64 // exact VJP trace bpd of each comparison image
}

// RunBPD computes bits per dimension of dequantised test images: the trace
// methods side by side on CompareImages (identical Heun trajectories, so
// the differences are the traces'), DF-TM's convergence in the solver, and
// DF-TM on BPDImages.
func RunBPD(ctx context.Context, nets *Networks, cfg Config, test *Set, log io.Writer) (*BPDResult, error) {
	n := nets.Net
	f, err := newFused(n)
	if err != nil {
		return nil, err
	}
	vjp, err := access.NewVJPTrace(n, 4096)
	if err != nil {
		return nil, err
	}
	h1, err := access.NewHutchinson(n, 1, access.Rademacher, cfg.Seed)
	if err != nil {
		return nil, err
	}
	h16, err := access.NewHutchinson(n, 16, access.Rademacher, cfg.Seed)
	if err != nil {
		return nil, err
	}
	res := &BPDResult{Start: cfg.BPDStart}
	xs, err := test.Dequantized(0, max(cfg.BPDImages, cfg.CompareImages), cfg.Seed)
	if err != nil {
		return nil, err
	}
	cmpX := xs.Slice(0, cfg.CompareImages, 0, Dim).(*mat.Dense)
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
	heun := func(steps int) likelihood.Config {
		return likelihood.Config{Schedule: n.Schedule, T0: cfg.BPDStart, Steps: steps, Solver: likelihood.Heun}
	}
	// the side-by-side comparison on one trajectory
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
	var ref []float64
	for _, m := range methods {
		fmt.Fprintf(log, "mnist: bpd of %d test images with %s (Heun, %d steps)\n", cfg.CompareImages, m.name, cfg.CompareSteps)
		bpd, nfe, secs, err := run(cmpX, m.dyn, heun(cfg.CompareSteps), m.batch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
		bm := BPDMethod{Method: m.name, Solver: fmt.Sprintf("heun %d steps", cfg.CompareSteps), Images: len(bpd), SecsPerImage: secs, NFE: nfe}
		bm.MeanBPD, bm.SEBPD = meanSE(bpd)
		if ref == nil {
			ref = bpd
			res.PerImageEx = bpd
		} else {
			for i := range bpd { // relative NLL error = relative bpd error of the −log p part
				nl, nlRef := bpd[i]-Quant.Offset(), ref[i]-Quant.Offset()
				e := math.Abs(nl-nlRef) / math.Abs(nlRef)
				bm.RelNLLErr += e / float64(len(bpd))
				bm.MaxRelNLLErr = math.Max(bm.MaxRelNLLErr, e)
			}
		}
		if m.name == "df-tm" {
			res.PerImage = bpd
		}
		res.Compare = append(res.Compare, bm)
	}
	// DF-TM's convergence in the solver
	dtm := dynamics{f: f, kind: traceDFTM}
	var conv [][]float64
	for _, st := range cfg.ConvSteps {
		bpd, nfe, secs, err := run(cmpX, dtm, heun(st), 64)
		if err != nil {
			return nil, err
		}
		m, _ := meanSE(bpd)
		res.Conv = append(res.Conv, ConvRow{Solver: fmt.Sprintf("heun %d", st), NFE: nfe, MeanBPD: m, SecsPerImage: secs})
		conv = append(conv, bpd)
	}
	lc := likelihood.Config{Schedule: n.Schedule, T0: cfg.BPDStart, RTol: cfg.ConvRTol}
	bpd, nfe, secs, err := run(cmpX, dtm, lc, 64)
	if err != nil {
		return nil, err
	}
	m, _ := meanSE(bpd)
	res.Conv = append(res.Conv, ConvRow{Solver: fmt.Sprintf("dopri5 rtol %g", cfg.ConvRTol), NFE: nfe, MeanBPD: m, SecsPerImage: secs})
	conv = append(conv, bpd)
	refConv := conv[len(conv)-1] // the adaptive solve is the reference
	for i := range res.Conv {
		for k := range refConv {
			res.Conv[i].DiffToRef += math.Abs(conv[i][k]-refConv[k]) / float64(len(refConv))
		}
	}
	// the whole (or a part of the) test set with DF-TM
	fmt.Fprintf(log, "mnist: bpd of %d test images with DF-TM (Heun, %d steps)\n", cfg.BPDImages, cfg.BPDSteps)
	whole, nfe, secs, err := run(xs.Slice(0, cfg.BPDImages, 0, Dim).(*mat.Dense), dtm, heun(cfg.BPDSteps), 250)
	if err != nil {
		return nil, err
	}
	res.Whole = BPDMethod{Method: "df-tm", Solver: fmt.Sprintf("heun %d steps", cfg.BPDSteps), Images: len(whole), SecsPerImage: secs, NFE: nfe}
	res.Whole.MeanBPD, res.Whole.SEBPD = meanSE(whole)
	return res, nil
}

func meanSE(v []float64) (mean, se float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1) / float64(len(v)))
}
