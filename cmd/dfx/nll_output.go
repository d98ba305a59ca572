package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"gonum.org/v1/gonum/stat"
)

type nllPointOut struct {
	NLL         float64  `json:"nll"`
	BPD         float64  `json:"bpd"`
	NFE         int      `json:"nfe"`
	SolverError *float64 `json:"solver_error,omitempty"`
}

type nllSummary struct {
	Count        int      `json:"count"`
	Dim          int      `json:"d"`
	NLLMean      float64  `json:"nll_mean"`
	NLLStd       float64  `json:"nll_std"`
	BPDMean      float64  `json:"bpd_mean"`
	BPDStd       float64  `json:"bpd_std"`
	BPDOffset    float64  `json:"bpd_offset"`
	BPDNote      string   `json:"bpd_note"`
	Model        string   `json:"model"`
	Trace        string   `json:"trace"`
	Schedule     string   `json:"schedule"`
	S            float64  `json:"s"`
	T            float64  `json:"T"`
	Prior        string   `json:"prior"`
	Solver       string   `json:"solver"`
	Steps        int      `json:"steps,omitempty"`
	RTol         float64  `json:"rtol,omitempty"`
	ATol         float64  `json:"atol,omitempty"`
	NFE          int      `json:"nfe"`
	NFENote      string   `json:"nfe_note"`
	Rejected     int      `json:"rejected_steps,omitempty"`
	SolverErrMax *float64 `json:"solver_error_max"`
	SolverErrMed *float64 `json:"solver_error_mean"`
	SolverNote   string   `json:"solver_error_note"`
	WallSeconds  float64  `json:"wall_seconds"`
}

// nllOutputs computes the per-point outputs and the summary.
func nllOutputs(j *nllJob, r *nllResult) ([]nllPointOut, nllSummary, error) {
	n, d := j.pts.x.Dims()
	var q *likelihood.Quantization
	sum := nllSummary{Count: n, Dim: d, Model: j.model.describe(), Trace: j.model.trace, Schedule: j.sched.Name(),
		S: j.s, T: j.T, Prior: r.prior, NFE: r.stats.NFE, Rejected: r.stats.Rejected, WallSeconds: r.wall.Seconds(),
		NFENote: "evaluations of score and trace, summed over batches and over the error-estimating second solve; a point's nfe is its batch's"}
	switch {
	case j.pts.images && j.pts.dequantized:
		q = &likelihood.Quantization{Levels: 256, Lo: -1, Hi: 1}
		sum.BPDNote = "8-bit images in [−1, 1], uniformly dequantised: +7 bits (log₂ 256 − log₂ 2); the bpd is an " +
			"upper bound on the discrete images' (in expectation over the noise)"
	case j.pts.images:
		q = &likelihood.Quantization{Levels: 256, Lo: -1, Hi: 1}
		sum.BPDNote = "8-bit images in [−1, 1]: +7 bits (log₂ 256 − log₂ 2), density at the pixel values times the " +
			"bin width; not a bound (use --dequantize for one)"
	default:
		sum.BPDNote = "no offset: the points are not known to be 8-bit images; bpd = nll/(d ln 2) of the continuous density"
	}
	bpd, err := likelihood.BitsPerDim(r.logProb, d, q)
	if err != nil {
		return nil, sum, err
	}
	if q != nil {
		sum.BPDOffset = q.Offset()
	}
	pts := make([]nllPointOut, n)
	nll := make([]float64, n)
	for i := range pts {
		nll[i] = -r.logProb[i]
		pts[i] = nllPointOut{NLL: nll[i], BPD: bpd[i], NFE: r.nfe[i]}
		if r.solverErr != nil {
			e := r.solverErr[i]
			pts[i].SolverError = &e
		}
	}
	sum.NLLMean, sum.NLLStd = meanStd(nll)
	sum.BPDMean, sum.BPDStd = meanStd(bpd)
	if j.adaptive {
		sum.Solver, sum.RTol, sum.ATol = "dopri5", j.rtol, j.atol
	} else {
		sum.Solver, sum.Steps = j.method.Name(), j.steps
	}
	if r.solverErr != nil {
		mx, mean := 0.0, 0.0
		for _, e := range r.solverErr {
			mx = math.Max(mx, e)
			mean += e / float64(n)
		}
		sum.SolverErrMax, sum.SolverErrMed = &mx, &mean
		if j.adaptive {
			sum.SolverNote = "|L(tol) − L(32·tol)|/31 in nats, a step-halving estimate of the error of each nll"
		} else {
			sum.SolverNote = fmt.Sprintf("Richardson |L(M) − L(M/2)|/(2^p − 1), p = %d, in nats: the estimated error of each nll", j.method.Order())
		}
	} else {
		sum.SolverNote = "not estimated (--solver-error=false, or a single step)"
	}
	return pts, sum, nil
}

func meanStd(v []float64) (float64, float64) {
	if len(v) < 2 {
		return v[0], 0
	}
	return stat.MeanStdDev(v, nil)
}

func writeNLLJSON(w io.Writer, j *nllJob, r *nllResult) error {
	pts, sum, err := nllOutputs(j, r)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(map[string]any{"points": pts, "summary": sum}); err != nil {
		return fmt.Errorf("encoding the result (non-finite value?): %w", err)
	}
	return nil
}

func writeNLLText(w io.Writer, j *nllJob, r *nllResult) error {
	pts, sum, err := nllOutputs(j, r)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "point\tnll (nats)\tbpd\tnfe\tsolver error\t")
	for i, p := range pts {
		se := "—"
		if p.SolverError != nil {
			se = fmt.Sprintf("%.2g", *p.SolverError)
		}
		fmt.Fprintf(tw, "%d\t%.6g\t%.6g\t%d\t%s\t\n", i, p.NLL, p.BPD, p.NFE, se)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	solver := fmt.Sprintf("%s, %d steps", sum.Solver, sum.Steps)
	if j.adaptive {
		solver = fmt.Sprintf("dopri5, rtol %g, atol %g", sum.RTol, sum.ATol)
	}
	if j.exact {
		solver = "none (--exact)"
	}
	fmt.Fprintf(w, "summary: %d points in d = %d; nll %.6g ± %.3g nats; bpd %.6g ± %.3g\n", sum.Count, sum.Dim, sum.NLLMean, sum.NLLStd, sum.BPDMean, sum.BPDStd)
	fmt.Fprintf(w, "model: %s; schedule %s from s = %g to T = %g; prior %s\n", sum.Model, sum.Schedule, sum.S, sum.T, sum.Prior)
	fmt.Fprintf(w, "solver: %s; %d evaluations in %.3gs", solver, sum.NFE, sum.WallSeconds)
	if sum.SolverErrMax != nil {
		fmt.Fprintf(w, "; estimated solver error ≤ %.2g nats (mean %.2g)", *sum.SolverErrMax, *sum.SolverErrMed)
	}
	fmt.Fprintf(w, "\nbpd offset %g: %s\n", sum.BPDOffset, sum.BPDNote)
	return nil
}
