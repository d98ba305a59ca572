package model

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/problem"
)

// BaselineFit is one closed-form density fitted to the dequantised training
// images (Components 0: the uniform density on [−1, 1]^d).
type BaselineFit struct {
	Name string
	Opt  mixture.FitOptions
}

// BaselineConfig sets the closed-form baselines experiment.
type BaselineConfig struct {
	Profile    report.Profile
	TestImages int // first n test images, dequantised with seed 2
	Samples    int // exact samples per class for the frame rms and the figure
	Fits       []BaselineFit
	Figure     []string // names of the fits whose samples are drawn
	// NetsDir holds the classifier of the quality measures ("": the
	// committed one); it must have been trained on the data in DataDir.
	NetsDir string
}

// BaselineFits are the full profile's densities: one Gaussian (diagonal,
// full), Gaussians per class, and mixtures of 10 Gaussians per class with
// full and low-rank covariances (SkipOptions: the ε-networks' skip).
func BaselineFits() []BaselineFit {
	per := func(k, rank int, idle float64) mixture.FitOptions {
		return mixture.FitOptions{Components: k, PerClass: true, Rank: rank, Shrink: 0.2, Idle: idle, Seed: 1}
	}
	per40 := func(rank int) mixture.FitOptions {
		o := *mnist.SkipOptions()
		o.Rank = rank
		return o
	}
	return []BaselineFit{
		{Name: "uniform on [−1, 1]^d"},
		{Name: "Gaussian, diagonal", Opt: mixture.FitOptions{Components: 1, Shrink: 1, Seed: 1}},
		{Name: "Gaussian, full covariance", Opt: mixture.FitOptions{Components: 1, Seed: 1}},
		{Name: "1 Gaussian per class", Opt: per(1, 0, 0)},
		{Name: "10 Gaussians per class, full", Opt: per(10, 0, 0)},
		{Name: "10 per class, rank 128 + rest + idle", Opt: per(10, 128, 1e-4)},
		{Name: "10 per class, rank 64 + rest + idle", Opt: *mnist.SkipOptionsV1()},
		{Name: "10 per class, rank 32 + rest + idle", Opt: per(10, 32, 1e-4)},
		{Name: "10 per class, rank 64 + rest (no idle)", Opt: per(10, 64, 0)},
		{Name: "40 per class, rank 8 + rest + idle", Opt: per40(8)},
		{Name: "40 per class, rank 16 + rest + idle", Opt: per40(16)},
		{Name: "40 per class, rank 32 + rest + idle (skip)", Opt: *mnist.SkipOptions()},
	}
}

// BaselinesFull and BaselinesQuick are the two profiles.
func BaselinesFull() BaselineConfig {
	return BaselineConfig{Profile: report.Full, TestImages: 10000, Samples: 1000, Fits: BaselineFits(),
		Figure: []string{"10 Gaussians per class, full", "40 per class, rank 32 + rest + idle (skip)"}}
}

func BaselinesQuick() BaselineConfig {
	return BaselineConfig{Profile: report.Quick, TestImages: 200, Samples: 20, Fits: []BaselineFit{
		{Name: "uniform on [−1, 1]^d"},
		{Name: "Gaussian, diagonal", Opt: mixture.FitOptions{Components: 1, Shrink: 1, Seed: 1}},
		{Name: "1 Gaussian per class, rank 16 + rest + idle", Opt: mixture.FitOptions{Components: 1, PerClass: true, Rank: 16, Shrink: 0.2, Idle: 1e-4, Seed: 1}},
	}, Figure: []string{"1 Gaussian per class, rank 16 + rest + idle"}}
}

// BaselineRow is one density's line of the table.
type BaselineRow struct {
	Name       string
	Components int
	Values     int      // stored numbers (means, bases, variances)
	FitSecs    float64  // fit time (k-means, covariances, eigendecompositions)
	BPD, SE    float64  // exact test bpd (log q at t_min) and its standard error
	EvalMs     float64  // log q per test image
	FrameRMS   float64  // rms intensity in [0, 1] of the 2-pixel frame of exact samples
	Quality    *Quality // of the exact samples (class-conditional per class where fitted per class)
}

// BaselineResult is the closed-form baselines experiment.
type BaselineResult struct {
	Config       BaselineConfig
	Rows         []BaselineRow
	TestFrameRMS float64 // the same for the dequantised test images
	Ref          *QualityRef
	Samples      map[string][]*mat.Dense // per figure fit: Samples per class, [class][i] 1×d
	Elapsed      time.Duration
}

// RunBaselines fits every density of cfg to the 60 000 dequantised
// training images (FitMixture) and scores it exactly on the dequantised
// test images: log q_{t_min} of a Gaussian mixture is in closed form (no
// ODE), so these rows are what a learned model's bpd must beat.
func RunBaselines(ctx context.Context, p *problem.Problem, lab Lab, cfg BaselineConfig, log io.Writer) (*BaselineResult, error) {
	start := time.Now()
	x, err := p.Dequantized(ctx, cfg.TestImages, 2)
	if err != nil {
		return nil, err
	}
	res := &BaselineResult{Config: cfg, TestFrameRMS: mnist.FrameRMS(x), Samples: map[string][]*mat.Dense{}}
	if res.Ref, err = baselineQualityRef(ctx, p, lab, cfg); err != nil {
		return nil, err
	}
	s := p.Schedule
	tMin, _ := s.Interval()
	co, err := schedule.At(s, tMin)
	if err != nil {
		return nil, err
	}
	for _, f := range cfg.Fits {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.Opt.Components == 0 { // uniform: log p = −d log 2, frame of uniform noise
			res.Rows = append(res.Rows, BaselineRow{Name: f.Name, BPD: 1 + quantization(p).Offset(), FrameRMS: math.Sqrt(1.0 / 3)})
			continue
		}
		rng := rand.New(rand.NewPCG(4, uint64(len(res.Rows))))
		row, perClass, err := scoreBaseline(ctx, p, lab, f, x, co, res.Ref, cfg.Samples, rng)
		if err != nil {
			return nil, err
		}
		for _, name := range cfg.Figure {
			if name == f.Name {
				res.Samples[name] = perClass
			}
		}
		fmt.Fprintf(log, "baselines: %s: %d components, fitted in %.1f s: %.4f ± %.4f bpd, frame rms %.3f\n",
			f.Name, row.Components, row.FitSecs, row.BPD, row.SE, row.FrameRMS)
		res.Rows = append(res.Rows, row)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// baselineQualityRef is the quality reference of the classifier in
// cfg.NetsDir (or the committed one), which must have been trained on the
// training images here.
func baselineQualityRef(ctx context.Context, p *problem.Problem, lab Lab, cfg BaselineConfig) (*QualityRef, error) {
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	cst, err := lab.Classifier(cfg.NetsDir)
	if err != nil {
		return nil, err
	}
	cls, err := models.NewClassifier(backend, cst, p.Dim)
	if err != nil {
		return nil, err
	}
	return NewQualityRef(ctx, p, lab, cls, cfg.TestImages)
}

// scoreBaseline fits one baseline, scores the test images x exactly at co
// (t_min) and measures samples of it (n per class): its row and the
// samples of each class.
func scoreBaseline(ctx context.Context, p *problem.Problem, lab Lab, f BaselineFit, x *mat.Dense, co schedule.Coefficients, ref *QualityRef, n int,
	rng *rand.Rand) (BaselineRow, []*mat.Dense, error) {
	row := BaselineRow{Name: f.Name}
	t0 := time.Now()
	g, err := lab.Fit(ctx, f.Opt)
	if err != nil {
		return row, nil, fmt.Errorf("mnist: baseline %s: %w", f.Name, err)
	}
	row.FitSecs = time.Since(t0).Seconds()
	row.Components = g.Components()
	for k := 0; k < g.Components(); k++ {
		c := g.Component(k)
		r := len(c.Lambda)
		row.Values += p.Dim + p.Dim*r + r + 2 + len(c.Idle)
	}
	t0 = time.Now()
	lq, err := g.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb})
	if err != nil {
		return row, nil, fmt.Errorf("mnist: baseline %s: %w", f.Name, err)
	}
	nx, _ := x.Dims()
	row.EvalMs = 1000 * time.Since(t0).Seconds() / float64(nx)
	quant := quantization(p)
	bpd, err := likelihood.BitsPerDim(lq.LogProb, p.Dim, &quant)
	if err != nil {
		return row, nil, err
	}
	row.BPD, row.SE = stats.MeanSE(bpd)
	stacked, perClass, err := sampleClasses(g, rng, n, p.Dim, f.Opt.PerClass)
	if err != nil {
		return row, nil, err
	}
	row.FrameRMS = mnist.FrameRMS(stacked)
	var requested []int
	if f.Opt.PerClass {
		for c := 0; c < 10; c++ {
			for range n {
				requested = append(requested, c)
			}
		}
	}
	if row.Quality, err = ref.Measure(stacked, requested); err != nil {
		return row, nil, err
	}
	return row, perClass, nil
}

// sampleClasses draws n samples for each class from g (of the class's
// components when perClass, of the whole mixture otherwise): all stacked,
// class c in rows [c·n, (c+1)·n), and each class's apart.
func sampleClasses(g *mixture.Gaussian, rng *rand.Rand, n, d int, perClass bool) (*mat.Dense, []*mat.Dense, error) {
	stacked := mat.NewDense(10*n, d, nil)
	var each []*mat.Dense
	for c := 0; c < 10; c++ {
		cls := c
		if !perClass {
			cls = -1
		}
		smp, err := g.Sample(rng, n, cls)
		if err != nil {
			return nil, nil, err
		}
		stacked.Slice(c*n, (c+1)*n, 0, d).(*mat.Dense).Copy(smp)
		each = append(each, smp)
	}
	return stacked, each, nil
}

// Report implements report.Result.
func (r *BaselineResult) Report() (*report.Report, error) {
	where := fmt.Sprintf("Measured on %s, %s profile; `dfx reproduce mnist-baselines` in %.0f s.", mnist.Machine(), r.Config.Profile, r.Elapsed.Seconds())
	t := &report.Table{Name: "baselines",
		Title: fmt.Sprintf("## Closed-form baselines: Gaussians and Gaussian mixtures fitted to MNIST\n\n%s "+
			"Each density is fitted to the training images (dequantised, seed 1) and scored exactly on the first %d dequantised test images: "+
			"bpd = −log₂ q_{t_min}(x)/d + 7 in closed form. The protocol and its reading: NOTES.md.", where, r.Config.TestImages),
		Caption: "closed-form baselines: exact test bpd of Gaussians and Gaussian mixtures fitted to MNIST, their size, fit time and the frame rms of their samples",
		Columns: []report.Column{{Name: "density"}, {Name: "components"}, {Name: "stored values", NoCSV: true}, {Name: "stored_values", NoMarkdown: true},
			{Name: "fit time", Key: "fit_time", Unit: "s", Format: "%.1f s"}, {Name: "test bpd", Key: "bpd", Format: "%.4f"},
			{Name: "± SE", Key: "bpd_se", Format: "%.4f"},
			{Name: "log q per image", Key: "eval_time", Unit: "ms", Format: "%.3g ms"}, {Name: "frame rms of samples", Key: "frame_rms", Format: "%.3f"},
			percent("classifier agreement", "classifier_agreement"), percent("k-NN agreement", "knn_agreement"),
			{Name: "Fréchet distance (classifier features)", Key: "frechet_distance", Format: "%.1f"},
			{Name: "median distance to nearest training image", Key: "nearest_median", Format: "%.2f"}},
		Align: "lrrrrrrrrrrr"}
	for _, row := range r.Rows {
		comps, shown, vals, fit, se, ev := report.None(), report.None(), report.None(), report.None(), report.None(), report.None()
		if row.Components > 0 {
			comps, vals, fit, se, ev = report.Int(row.Components), report.Int(row.Values), report.Float(row.FitSecs), report.Float(row.SE), report.Float(row.EvalMs)
			shown = report.Text(fmt.Sprintf("%.3g (%.1f MB f32)", float64(row.Values), 4*float64(row.Values)/1e6))
		}
		ca, ka, fd, nn := report.None(), report.None(), report.None(), report.None()
		if q := row.Quality; q != nil {
			if !math.IsNaN(q.ClassifierAgree) {
				ca, ka = report.Float(q.ClassifierAgree), report.Float(q.KNNAgree)
			}
			fd, nn = report.Float(q.FD), report.Float(q.NearestMedian)
		}
		t.Add(report.Text(row.Name), comps, shown, vals, fit, report.Float(row.BPD), se, ev, report.Float(row.FrameRMS), ca, ka, fd, nn)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Sample quality over %d exact samples per class; k-NN agreement by the %d nearest training images; "+
		"Fréchet distance to %d test images' classifier features. The dequantised test images give a frame rms of %.3f and a median distance "+
		"of %.2f to the nearest training image.", r.Config.Samples, knnK, r.Config.TestImages, r.TestFrameRMS, r.Ref.TestNearest))
	rep := &report.Report{Name: "mnist-baselines", Title: "Closed-form MNIST baselines", Tables: []*report.Table{t}}
	for i, name := range r.Config.Figure {
		smp := r.Samples[name]
		if smp == nil {
			continue
		}
		name := name
		rep.Figures = append(rep.Figures, &report.Figure{Name: fmt.Sprintf("samples_%d.png", i+1),
			Caption: "exact samples of the fitted " + name + " (one row per class; intensities clipped to [−1, 1])",
			Render: func(format string) ([]byte, error) {
				var rows [][]*mat.Dense
				for _, m := range smp {
					var row []*mat.Dense
					n, d := m.Dims()
					for j := 0; j < min(n, 10); j++ {
						row = append(row, mat.NewDense(1, d, m.RawRowView(j)))
					}
					rows = append(rows, row)
				}
				p, err := mnist.ImageGrid("exact samples: "+name, "sample", "class (row)", rows, nil)
				if err != nil {
					return nil, err
				}
				return plotx.Bytes(p, 10*0.55*vg.Inch+1.3*vg.Inch, vg.Length(len(rows))*0.55*vg.Inch+1.1*vg.Inch, format)
			}})
	}
	return rep, nil
}

// percent is a column of fractions shown in percent (CSV key key).
func percent(name, key string) report.Column {
	return report.Column{Name: name, Key: key, Format: "%.2f%%", Scale: 100}
}
