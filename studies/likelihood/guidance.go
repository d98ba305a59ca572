package likelihood

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxlikelihood "github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/problem"
)

// GuidanceRow is one guidance scale of Figure 1b.
type GuidanceRow struct {
	Scale                float64
	Samples              int
	LogProb, LogProbSE   float64 // classifier log p(c | x) of the requested class (the CLIP-score stand-in)
	Accuracy             float64 // fraction classified as the requested class
	PaperBPD, PaperSE    float64 // DF-TM, the paper's protocol (Euler 10 steps, first step left out)
	ConvBPD, ConvSE      float64 // DF-TM, Heun with BPDSteps from t₁
	SampleSecs, NLLSecs  float64 // wall time of sampling and of both NLL protocols
	PaperT0, ConvStartAt float64
	Examples             []*mat.Dense // the first sample of each class (clipped), for samples_by_scale.png
}

// GuidanceResult is the Figure 1b analogue.
type GuidanceResult struct {
	Rows []GuidanceRow
}

// quantize maps samples to the codes of the pixel grid q and dequantises
// them like the test data (seeded), so their bits per dimension read like
// the test set's.
func quantize(x *mat.Dense, q *dfxlikelihood.Quantization, seed uint64) (*mat.Dense, error) {
	b, d := x.Dims()
	top := float64(q.Levels - 1)
	codes := mat.NewDense(b, d, nil)
	for i := range b {
		for j := range d {
			k := math.Round((x.At(i, j) + 1) / 2 * top)
			codes.Set(i, j, math.Max(0, math.Min(top, k)))
		}
	}
	return q.Dequantize(codes, rand.New(rand.NewPCG(seed, 0x71)))
}

// nllBPD is the bpd (on the pixel grid q) of the rows of x under dyn and
// lc, in batches.
func nllBPD(ctx context.Context, dyn score.Model, x *mat.Dense, lc dfxlikelihood.Config, q *dfxlikelihood.Quantization) ([]float64, error) {
	b, d := x.Dims()
	var out []float64
	for lo := 0; lo < b; lo += 64 {
		hi := min(lo+64, b)
		r, err := dfxlikelihood.LogProbContext(ctx, x.Slice(lo, hi, 0, d).(*mat.Dense), dyn, lc)
		if err != nil {
			return nil, err
		}
		v, err := dfxlikelihood.BitsPerDim(r.LogProb, d, q)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// protocols returns the paper's NLL protocol (explicit Euler with 10 steps
// on [t_min, T], the first step, nearest t = 0, left out: the integration
// starts at t₁ = t_min + (T − t_min)/10 with the image as x_{t₁}) and the
// same start with a finer solver (Heun, BPDSteps). DF-TM cannot start
// nearer t = 0 on MNIST: its α²/σ⁴ amplification of t_θ's error is
// catastrophic there (bpd.md's rows from s).
func protocols(s schedule.Schedule, cfg Config) (paper, fine dfxlikelihood.Config) {
	lo, hi := s.Interval()
	t1 := lo + (hi-lo)/10
	return dfxlikelihood.Config{Schedule: s, T0: t1, Steps: 9, Solver: dfxlikelihood.Euler},
		dfxlikelihood.Config{Schedule: s, T0: t1, Steps: cfg.BPDSteps, Solver: dfxlikelihood.Heun}
}

// guidance samples SamplesPerScale images (balanced over classes, the
// same initial noise at every scale) at each guidance scale and scores them
// by the classifier and by DF-TM's NLL under both protocols.
func (s study) guidance(ctx context.Context) (*GuidanceResult, error) {
	f, err := access.NewFused(s.nets.Net)
	if err != nil {
		return nil, err
	}
	cfg := s.cfg
	dyn := access.FusedModel{F: f, Trace: access.FusedDFTM}
	paper, fine := protocols(s.p.Schedule, cfg)
	res := &GuidanceResult{}
	n := cfg.SamplesPerScale
	class := make([]int, n)
	for i := range class {
		class[i] = i % s.nets.Classes
	}
	for _, sc := range cfg.Scales {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		scale := make([]float64, n)
		for i := range scale {
			scale[i] = sc
		}
		start := time.Now()
		x, err := s.nets.Sample(ctx, cfg.DDIMSteps, cfg.Seed, class, scale)
		if err != nil {
			return nil, err
		}
		row := GuidanceRow{Scale: sc, Samples: n, SampleSecs: time.Since(start).Seconds(), PaperT0: paper.T0, ConvStartAt: fine.T0}
		clipped := problem.Clip(x)
		row.Examples = plotx.SplitRows(mat.DenseCopyOf(clipped.Slice(0, min(s.nets.Classes, n), 0, s.p.Dim)))
		var lp []float64
		if lp, row.Accuracy, err = classScores(s.nets.Classifier, clipped, class); err != nil {
			return nil, err
		}
		row.LogProb, row.LogProbSE = stats.MeanSE(lp)
		if err := s.guidanceNLL(ctx, &row, dyn, x, paper, fine); err != nil {
			return nil, err
		}
		fmt.Fprintf(s.log, "%s: scale %g: log p(c|x) %.3f, accuracy %.1f%%, bpd %.3f (paper protocol) %.3f (Heun from t₁)\n",
			s.p.Name, sc, row.LogProb, 100*row.Accuracy, row.PaperBPD, row.ConvBPD)
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// guidanceNLL fills row's NLL columns: the bpd of the samples x, quantised,
// under both protocols.
func (s study) guidanceNLL(ctx context.Context, row *GuidanceRow, dyn score.Model, x *mat.Dense, paper, fine dfxlikelihood.Config) error {
	xq, err := quantize(x, s.quant(), s.cfg.Seed)
	if err != nil {
		return err
	}
	start := time.Now()
	pb, err := nllBPD(ctx, dyn, xq, paper, s.quant())
	if err != nil {
		return err
	}
	cb, err := nllBPD(ctx, dyn, xq, fine, s.quant())
	if err != nil {
		return err
	}
	row.NLLSecs = time.Since(start).Seconds()
	row.PaperBPD, row.PaperSE = stats.MeanSE(pb)
	row.ConvBPD, row.ConvSE = stats.MeanSE(cb)
	return nil
}

// classScores are the classifier's log p(c | x) of each row's requested
// class (the stand-in for the CLIP score) and the fraction of rows whose
// most probable class (the first, on ties) is the requested one.
func classScores(cl problem.Classifier, x *mat.Dense, class []int) ([]float64, float64, error) {
	lp, err := cl.LogProbs(x)
	if err != nil {
		return nil, 0, err
	}
	out := make([]float64, len(class))
	right := 0
	for i, k := range class {
		out[i] = lp.At(i, k)
		if floats.MaxIdx(lp.RawRowView(i)) == k {
			right++
		}
	}
	return out, float64(right) / float64(len(class)), nil
}

// Fig2Result is the Figure 2 analogue: per class, samples ordered by NLL.
type Fig2Result struct {
	Scale  float64
	Seeds  int
	Images [][]*mat.Dense // per class, clipped images [1, d] in increasing NLL
	BPD    [][]float64    // in the same order
	Conf   [][]float64    // classifier log p(c | x)
	NNDist [][]float64    // distance to the nearest training image
	// Spearman rank correlations (pooled over classes, and the mean of the
	// per-class ones) of NLL with classifier confidence and with the
	// nearest-training-image distance.
	RhoConf, RhoConfWithin float64
	RhoNN, RhoNNWithin     float64
}

// fig2 samples Fig2Seeds images per class at Fig2Scale and orders them by
// NLL; train are the training rows [N, d] (for the distance to the
// nearest).
func (s study) fig2(ctx context.Context, train *mat.Dense) (*Fig2Result, error) {
	f, err := access.NewFused(s.nets.Net)
	if err != nil {
		return nil, err
	}
	cfg, nc := s.cfg, s.nets.Classes
	_, fine := protocols(s.p.Schedule, cfg)
	k := cfg.Fig2Seeds
	class, scale := make([]int, nc*k), make([]float64, nc*k)
	for i := range class {
		class[i], scale[i] = i/k, cfg.Fig2Scale
	}
	x, err := s.nets.Sample(ctx, cfg.DDIMSteps, cfg.Seed+1000, class, scale)
	if err != nil {
		return nil, err
	}
	clipped := problem.Clip(x)
	xq, err := quantize(x, s.quant(), cfg.Seed)
	if err != nil {
		return nil, err
	}
	bpd, err := nllBPD(ctx, access.FusedModel{F: f, Trace: access.FusedDFTM}, xq, fine, s.quant())
	if err != nil {
		return nil, err
	}
	lp, _, err := classScores(s.nets.Classifier, clipped, class)
	if err != nil {
		return nil, err
	}
	nn := stats.NearestDistance(train, clipped)
	res := &Fig2Result{Scale: cfg.Fig2Scale, Seeds: k}
	res.RhoConf, res.RhoNN = Spearman(bpd, lp), Spearman(bpd, nn)
	images := plotx.SplitRows(clipped)
	for c := range nc {
		idx := make([]int, k)
		for i := range idx {
			idx[i] = c*k + i
		}
		sort.SliceStable(idx, func(a, b int) bool { return bpd[idx[a]] < bpd[idx[b]] })
		var im []*mat.Dense
		var b, cf, d []float64
		for _, i := range idx {
			im, b, cf, d = append(im, images[i]), append(b, bpd[i]), append(cf, lp[i]), append(d, nn[i])
		}
		res.Images, res.BPD, res.Conf, res.NNDist = append(res.Images, im), append(res.BPD, b), append(res.Conf, cf), append(res.NNDist, d)
		res.RhoConfWithin += Spearman(b, cf) / float64(nc)
		res.RhoNNWithin += Spearman(b, d) / float64(nc)
	}
	return res, nil
}

// Spearman is the rank correlation of a and b (average ranks for ties):
// stats.Spearman.
func Spearman(a, b []float64) float64 { return stats.Spearman(a, b) }
