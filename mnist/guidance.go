package mnist

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
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

// quantize maps samples to 8-bit codes and dequantises them like the test
// data (seeded), so their bits per dimension read like the test set's.
func quantize(x *mat.Dense, seed uint64) (*mat.Dense, error) {
	b, d := x.Dims()
	codes := mat.NewDense(b, d, nil)
	for i := range b {
		for j := range d {
			k := math.Round((x.At(i, j) + 1) / 2 * 255)
			codes.Set(i, j, math.Max(0, math.Min(255, k)))
		}
	}
	return Quant.Dequantize(codes, rand.New(rand.NewPCG(seed, 0x71)))
}

// nllBPD is DF-TM's bpd of the rows of x under lc, in batches.
func nllBPD(ctx context.Context, dyn score.Model, x *mat.Dense, lc likelihood.Config) ([]float64, error) {
	b, _ := x.Dims()
	var out []float64
	for lo := 0; lo < b; lo += 64 {
		hi := min(lo+64, b)
		r, err := likelihood.LogProbContext(ctx, x.Slice(lo, hi, 0, Dim).(*mat.Dense), dyn, lc)
		if err != nil {
			return nil, err
		}
		v, err := likelihood.BitsPerDim(r.LogProb, Dim, &Quant)
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
func protocols(cfg Config) (paper, fine likelihood.Config) {
	s := Schedule()
	lo, hi := s.Interval()
	t1 := lo + (hi-lo)/10
	return likelihood.Config{Schedule: s, T0: t1, Steps: 9, Solver: likelihood.Euler},
		likelihood.Config{Schedule: s, T0: t1, Steps: cfg.BPDSteps, Solver: likelihood.Heun}
}

// RunGuidance samples SamplesPerScale images (balanced over classes, the
// same initial noise at every scale) at each guidance scale and scores them
// by the classifier and by DF-TM's NLL under both protocols.
func RunGuidance(ctx context.Context, nets *Networks, cfg Config, log io.Writer) (*GuidanceResult, error) {
	f, err := newFused(nets.Net)
	if err != nil {
		return nil, err
	}
	dyn := dynamics{f: f, kind: traceDFTM}
	paper, fine := protocols(cfg)
	res := &GuidanceResult{}
	n := cfg.SamplesPerScale
	class := make([]int, n)
	for i := range class {
		class[i] = i % 10
	}
	for _, s := range cfg.Scales {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		scale := make([]float64, n)
		for i := range scale {
			scale[i] = s
		}
		start := time.Now()
		x, err := nets.SampleContext(ctx, SampleConfig{Steps: cfg.DDIMSteps, Seed: cfg.Seed}, class, scale)
		if err != nil {
			return nil, err
		}
		row := GuidanceRow{Scale: s, Samples: n, SampleSecs: time.Since(start).Seconds(), PaperT0: paper.T0, ConvStartAt: fine.T0}
		clipped := Clip(x)
		for c := range min(10, n) {
			row.Examples = append(row.Examples, mat.NewDense(1, Dim, clipped.RawRowView(c)))
		}
		lp, _, err := nets.ClassLogProb(clipped, class)
		if err != nil {
			return nil, err
		}
		row.LogProb, row.LogProbSE = stats.MeanSE(lp)
		if row.Accuracy, err = nets.Classifier.Accuracy(clipped, class); err != nil {
			return nil, err
		}
		xq, err := quantize(x, cfg.Seed)
		if err != nil {
			return nil, err
		}
		start = time.Now()
		pb, err := nllBPD(ctx, dyn, xq, paper)
		if err != nil {
			return nil, err
		}
		cb, err := nllBPD(ctx, dyn, xq, fine)
		if err != nil {
			return nil, err
		}
		row.NLLSecs = time.Since(start).Seconds()
		row.PaperBPD, row.PaperSE = stats.MeanSE(pb)
		row.ConvBPD, row.ConvSE = stats.MeanSE(cb)
		fmt.Fprintf(log, "mnist: scale %g: log p(c|x) %.3f, accuracy %.1f%%, bpd %.3f (paper protocol) %.3f (Heun from t₁)\n",
			s, row.LogProb, 100*row.Accuracy, row.PaperBPD, row.ConvBPD)
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// Fig2Result is the Figure 2 analogue: per class, samples ordered by NLL.
type Fig2Result struct {
	Scale  float64
	Seeds  int
	Images [10][]*mat.Dense // per class, clipped images [1, d] in increasing NLL
	BPD    [10][]float64    // in the same order
	Conf   [10][]float64    // classifier log p(c | x)
	NNDist [10][]float64    // distance to the nearest training image
	// Spearman rank correlations (pooled over classes, and the mean of the
	// per-class ones) of NLL with classifier confidence and with the
	// nearest-training-image distance.
	RhoConf, RhoConfWithin float64
	RhoNN, RhoNNWithin     float64
}

// RunFig2 samples Fig2Seeds images per class at Fig2Scale and orders them by NLL.
func RunFig2(ctx context.Context, nets *Networks, cfg Config, train *Set) (*Fig2Result, error) {
	f, err := newFused(nets.Net)
	if err != nil {
		return nil, err
	}
	_, fine := protocols(cfg)
	k := cfg.Fig2Seeds
	class, scale := make([]int, 10*k), make([]float64, 10*k)
	for i := range class {
		class[i], scale[i] = i/k, cfg.Fig2Scale
	}
	x, err := nets.SampleContext(ctx, SampleConfig{Steps: cfg.DDIMSteps, Seed: cfg.Seed + 1000}, class, scale)
	if err != nil {
		return nil, err
	}
	clipped := Clip(x)
	xq, err := quantize(x, cfg.Seed)
	if err != nil {
		return nil, err
	}
	bpd, err := nllBPD(ctx, dynamics{f: f, kind: traceDFTM}, xq, fine)
	if err != nil {
		return nil, err
	}
	lp, _, err := nets.ClassLogProb(clipped, class)
	if err != nil {
		return nil, err
	}
	y, err := train.Scaled(0, train.Images.N)
	if err != nil {
		return nil, err
	}
	nn := nearestDistance(y, clipped)
	res := &Fig2Result{Scale: cfg.Fig2Scale, Seeds: k}
	res.RhoConf, res.RhoNN = Spearman(bpd, lp), Spearman(bpd, nn)
	for c := range 10 {
		idx := make([]int, k)
		for i := range idx {
			idx[i] = c*k + i
		}
		sort.SliceStable(idx, func(a, b int) bool { return bpd[idx[a]] < bpd[idx[b]] })
		for _, i := range idx {
			res.Images[c] = append(res.Images[c], mat.NewDense(1, Dim, clipped.RawRowView(i)))
			res.BPD[c] = append(res.BPD[c], bpd[i])
			res.Conf[c] = append(res.Conf[c], lp[i])
			res.NNDist[c] = append(res.NNDist[c], nn[i])
		}
		res.RhoConfWithin += Spearman(res.BPD[c], res.Conf[c]) / 10
		res.RhoNNWithin += Spearman(res.BPD[c], res.NNDist[c]) / 10
	}
	return res, nil
}

// nearestDistance is min_i ‖x − y_i‖ for each row of x.
func nearestDistance(y, x *mat.Dense) []float64 {
	nq, _ := x.Dims()
	ny, _ := y.Dims()
	g := mat.NewDense(nq, ny, nil)
	g.Mul(x, y.T())
	out := make([]float64, nq)
	for q := range nq {
		xn := mat.Dot(x.RowView(q), x.RowView(q))
		best := math.Inf(1)
		row := g.RawRowView(q)
		for i := range ny {
			yi := y.RawRowView(i)
			var yn float64
			for _, v := range yi {
				yn += v * v
			}
			best = math.Min(best, xn-2*row[i]+yn)
		}
		out[q] = math.Sqrt(math.Max(best, 0))
	}
	return out
}

// Spearman is the rank correlation of a and b (average ranks for ties):
// stats.Spearman.
func Spearman(a, b []float64) float64 { return stats.Spearman(a, b) }

// TrajResult compares each generated sample's NLL accumulated along its
// own generation trajectory with the NLL from re-encoding it.
type TrajResult struct {
	Samples            int
	Steps              int
	TrajBPD, ReBPD     float64 // means
	MeanAbsDiff        float64 // mean |bpd_traj − bpd_re|
	MaxAbsDiff         float64
	XTRelErr           float64 // mean ‖x_T(re-encoded) − x_T‖ / ‖x_T‖
	TrajSecs, ReSecs   float64 // per sample
	SamplerOnlySecs    float64 // per sample: the same sampler without the log-density (no t_θ)
	TrajBPDs, ReBPDs   []float64
	TrajStart, TrajEnd float64
}

// RunTraj generates unconditional samples with the PF-ODE (Heun, BPDSteps,
// from T down to the paper protocol's t₁, where DF-TM is usable) while integrating the log-density ODE with DF-TM (which
// adds only t_θ to the sampler's cost), then re-encodes each sample from s
// to T with the same solver.
func RunTraj(ctx context.Context, nets *Networks, cfg Config) (*TrajResult, error) {
	f, err := newFused(nets.Net)
	if err != nil {
		return nil, err
	}
	dyn := dynamics{f: f, kind: traceDFTM}
	s := Schedule()
	_, tMax := s.Interval()
	b := cfg.TrajSamples
	xT := InitialNoise(cfg.Seed+2000, 0, b)
	_, fine := protocols(cfg)
	lc := likelihood.Config{Schedule: s, T0: fine.T0, T1: tMax, Steps: cfg.BPDSteps, Solver: likelihood.Heun}
	grid, err := likelihood.Grid(lc, cfg.BPDSteps)
	if err != nil {
		return nil, err
	}
	down := make([]float64, len(grid))
	for i := range grid {
		down[i] = grid[len(grid)-1-i]
	}
	res := &TrajResult{Samples: b, Steps: cfg.BPDSteps, TrajStart: tMax, TrajEnd: fine.T0}
	// the sampler alone (no log-density), for the marginal cost
	start := time.Now()
	plain := pfode.New(schedule.Continuous{Schedule: s}, access.NetModel{Net: nets.Net}, b, Dim, 0)
	plain.Drive = score.WantEps
	yp := plain.Init(xT, nil)
	if _, err := pfode.Solve(ctx, plain, pfode.Heun, down, yp, nil); err != nil {
		return nil, err
	}
	res.SamplerOnlySecs = time.Since(start).Seconds() / float64(b)
	start = time.Now()
	sys := pfode.New(schedule.Continuous{Schedule: s}, dyn, b, Dim, pfode.LogDensity)
	sys.Drive = score.WantScore
	y := sys.Init(xT, nil)
	if _, err := pfode.Solve(ctx, sys, pfode.Heun, down, y, nil); err != nil {
		return nil, err
	}
	res.TrajSecs = time.Since(start).Seconds() / float64(b)
	xs := mat.DenseCopyOf(sys.X(y))
	delta := sys.LogDensity(y)
	cT, err := schedule.At(s, tMax)
	if err != nil {
		return nil, err
	}
	prior := schedule.PriorLogProb(cT, xT)
	logq := make([]float64, b)
	for i := range logq {
		logq[i] = prior[i] + delta[i]
	}
	if res.TrajBPDs, err = likelihood.BitsPerDim(logq, Dim, &Quant); err != nil {
		return nil, err
	}
	start = time.Now()
	re, err := likelihood.LogProbContext(ctx, xs, dyn, lc)
	if err != nil {
		return nil, err
	}
	res.ReSecs = time.Since(start).Seconds() / float64(b)
	if res.ReBPDs, err = likelihood.BitsPerDim(re.LogProb, Dim, &Quant); err != nil {
		return nil, err
	}
	res.TrajBPD, _ = stats.MeanSE(res.TrajBPDs)
	res.ReBPD, _ = stats.MeanSE(res.ReBPDs)
	for i := range b {
		d := math.Abs(res.TrajBPDs[i] - res.ReBPDs[i])
		res.MeanAbsDiff += d / float64(b)
		res.MaxAbsDiff = math.Max(res.MaxAbsDiff, d)
		var num, den float64
		for j := range Dim {
			e := re.XT.At(i, j) - xT.At(i, j)
			num += e * e
			den += xT.At(i, j) * xT.At(i, j)
		}
		res.XTRelErr += math.Sqrt(num/den) / float64(b)
	}
	return res, nil
}
