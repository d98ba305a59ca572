package mnist

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// ModelEvalConfig says how RunModelEval evaluates one ε-network.
type ModelEvalConfig struct {
	Profile string
	// Dir and Name locate the ε-network (LoadNetwork: Dir/Name.dfxckpt,
	// else the committed checkpoint of that name) and the classifier
	// (Dir/classifier.dfxckpt, else the committed one).
	Dir, Name string
	// The likelihood: the first Images dequantised test images (seed 2),
	// dopri5 at RTol, and again at 10·RTol for the solver error; the trace
	// by Hutchinson with Probes Rademacher probes, on the residual only
	// (beside the skip's exact trace, access.ControlVariate) when the
	// network has a mixture skip.
	Images int
	RTol   float64
	Probes int
	// The samples: PerClass per digit, DDIM with Steps steps at each
	// classifier-free guidance scale of Scales (1: the conditional model).
	PerClass int
	Steps    int
	Scales   []float64
	Seed     uint64
}

// ModelEvalFull and ModelEvalQuick are the two profiles.
func ModelEvalFull(dir, name string) ModelEvalConfig {
	return ModelEvalConfig{Profile: "full", Dir: dir, Name: name, Images: 1000, RTol: 1e-4, Probes: 4, PerClass: 1000, Steps: 50, Scales: []float64{1, 2}, Seed: 1}
}

func ModelEvalQuick(dir, name string) ModelEvalConfig {
	return ModelEvalConfig{Profile: "quick", Dir: dir, Name: name, Images: 4, RTol: 1e-2, Probes: 1, PerClass: 2, Steps: 4, Scales: []float64{1}, Seed: 1}
}

// ModelEvalResult is one ε-network's test likelihood and samples, beside
// its skip mixture's (when it has one) on the same images.
type ModelEvalResult struct {
	Config  ModelEvalConfig
	About   string // the network: spec, parameters, training
	Machine string
	Seconds float64
	Trace   string // the trace estimator's name
	// BPD per image at RTol and at 10·RTol, and the skip mixture's exact bpd
	// on the same images (nil without a skip).
	BPD, Coarse, Mixture []float64
	NFE                  int // model evaluations per batch at RTol (mean)
	Quality              []ModelQuality
}

// ModelQuality is the quality of one set of samples.
type ModelQuality struct {
	Source string  // "network" or "skip mixture (exact samples)"
	Scale  float64 // guidance scale (network)
	Q      *Quality
	// Grid is the first (up to) 10 samples of each digit, for the figure.
	Grid [][]*mat.Dense
}

// gridOf is the first (up to) 10 of the perClass samples of each digit
// (rows of x in digit order), clipped.
func gridOf(x *mat.Dense, perClass int) [][]*mat.Dense {
	var rows [][]*mat.Dense
	for c := range 10 {
		var row []*mat.Dense
		for j := 0; j < min(perClass, 10); j++ {
			row = append(row, mat.NewDense(1, Dim, mat.DenseCopyOf(x.Slice(c*perClass+j, c*perClass+j+1, 0, Dim)).RawRowView(0)))
		}
		rows = append(rows, row)
	}
	return rows
}

// RunModelEval measures the ε-network's test bpd (converged dopri5, solver
// error and trace estimator stated) and the quality of its samples, beside
// its skip mixture's exact bpd and exact samples.
func RunModelEval(ctx context.Context, cfg ModelEvalConfig, log io.Writer) (*ModelEvalResult, error) {
	start := time.Now()
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	store, rec, err := LoadNetwork(cfg.Dir, cfg.Name)
	if err != nil {
		return nil, err
	}
	net, err := models.NewAccessNet(backend, store, Schedule(), false)
	if err != nil {
		return nil, err
	}
	res := &ModelEvalResult{Config: cfg, Machine: Machine(),
		About: fmt.Sprintf("%s: %d steps, %.1f h on %s", cfg.Name, rec.Steps, rec.Seconds/3600, rec.Machine)}
	trace, skip, err := evalTrace(backend, store, net, cfg)
	if err != nil {
		return nil, err
	}
	res.Trace = trace.Name()
	x, err := TestImages(cfg.Images)
	if err != nil {
		return nil, err
	}
	if skip != nil {
		if res.Mixture, err = mixtureBPDAt(skip, x); err != nil {
			return nil, err
		}
	}
	const batch = 50
	for lo := 0; lo < cfg.Images; lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+batch, cfg.Images)
		rows := x.Slice(lo, hi, 0, Dim).(*mat.Dense)
		for i, rtol := range []float64{cfg.RTol, 10 * cfg.RTol} {
			r, err := likelihood.LogProb(rows, access.NetModel{Net: net, Trace: trace}, likelihood.Config{Schedule: Schedule(), RTol: rtol})
			if err != nil {
				return nil, err
			}
			bpd, err := likelihood.BitsPerDim(r.LogProb, Dim, &Quant)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				res.BPD = append(res.BPD, bpd...)
				res.NFE += r.Evals
			} else {
				res.Coarse = append(res.Coarse, bpd...)
			}
		}
		m, se := stats.MeanSE(res.BPD)
		fmt.Fprintf(log, "mnist-model: %d/%d images: %.4f ± %.4f bpd\n", hi, cfg.Images, m, se)
	}
	res.NFE /= (cfg.Images + batch - 1) / batch
	if err := res.samples(backend, store, skip, cfg, log); err != nil {
		return nil, err
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// evalTrace is Hutchinson with cfg.Probes probes on the network, or, when
// it has a mixture skip, the skip's exact trace plus Hutchinson on the
// residual (access.ControlVariate); it returns the skip too (nil: none).
func evalTrace(backend compute.Backend, store *model.Store, net *access.Net, cfg ModelEvalConfig) (score.TraceEstimator, *mixture.Gaussian, error) {
	hutch := func(n *access.Net) (score.TraceEstimator, error) {
		return access.NewHutchinson(n, cfg.Probes, access.Rademacher, cfg.Seed)
	}
	if !models.HasNetwork(store, models.MixtureScope) {
		t, err := hutch(net)
		return t, nil, err
	}
	skip, err := models.MixtureSkipOf(store)
	if err != nil {
		return nil, nil, err
	}
	rnet, err := models.ResidualAccessNetwork(store)
	if err != nil {
		return nil, nil, err
	}
	rt, err := hutch(access.NewNet(backend, store, Schedule(), net.DType, rnet))
	if err != nil {
		return nil, nil, err
	}
	return access.ControlVariate{Known: score.Exact{Mixture: skip}, Residual: rt}, skip, nil
}

// mixtureBPDAt is a mixture's exact bpd (log q at t_min) at the points x.
func mixtureBPDAt(g *mixture.Gaussian, x *mat.Dense) ([]float64, error) {
	tMin, _ := Schedule().Interval()
	co, err := schedule.At(Schedule(), tMin)
	if err != nil {
		return nil, err
	}
	r, err := g.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb})
	if err != nil {
		return nil, err
	}
	return likelihood.BitsPerDim(r.LogProb, Dim, &Quant)
}

// samples draws PerClass samples per digit from the network at each scale
// and from the skip mixture, and measures them.
func (res *ModelEvalResult) samples(backend compute.Backend, store *model.Store, skip *mixture.Gaussian, cfg ModelEvalConfig, log io.Writer) error {
	cst, _, err := LoadNetwork(cfg.Dir, "classifier")
	if err != nil {
		return err
	}
	cls, err := models.NewClassifier(backend, cst, Dim)
	if err != nil {
		return err
	}
	ref, err := NewQualityRef(cls, min(10000, 100*cfg.PerClass))
	if err != nil {
		return err
	}
	n := 10 * cfg.PerClass
	class := make([]int, n)
	for i := range class {
		class[i] = i / cfg.PerClass
	}
	nets := &Networks{Backend: backend, Store: store}
	for _, s := range cfg.Scales {
		scale := make([]float64, n)
		for i := range scale {
			scale[i] = s
		}
		x, err := nets.Sample(SampleConfig{Steps: cfg.Steps, Seed: cfg.Seed}, class, scale)
		if err != nil {
			return err
		}
		x = Clip(x)
		q, err := ref.Measure(x, class)
		if err != nil {
			return err
		}
		res.Quality = append(res.Quality, ModelQuality{Source: "network", Scale: s, Q: q, Grid: gridOf(x, cfg.PerClass)})
		fmt.Fprintf(log, "mnist-model: %d samples at scale %g: classifier agreement %.1f%%, frame rms %.3f, FD %.1f\n", n, s, 100*q.ClassifierAgree, q.FrameRMS, q.FD)
	}
	if skip != nil {
		rng := rand.New(rand.NewPCG(cfg.Seed, 0x5a))
		x := mat.NewDense(n, Dim, nil)
		for c := range 10 {
			smp, err := skip.Sample(rng, cfg.PerClass, c)
			if err != nil {
				return err
			}
			x.Slice(c*cfg.PerClass, (c+1)*cfg.PerClass, 0, Dim).(*mat.Dense).Copy(smp)
		}
		x = Clip(x)
		q, err := ref.Measure(x, class)
		if err != nil {
			return err
		}
		res.Quality = append(res.Quality, ModelQuality{Source: "skip mixture (exact samples)", Scale: math.NaN(), Q: q, Grid: gridOf(x, cfg.PerClass)})
	}
	return nil
}

// Report implements report.Result.
func (r *ModelEvalResult) Report() (*report.Report, error) {
	c := r.Config
	m, se := stats.MeanSE(r.BPD)
	diffs := make([]float64, len(r.BPD))
	for i := range diffs {
		diffs[i] = math.Abs(r.BPD[i] - r.Coarse[i])
	}
	solverErr, _ := stats.MeanSE(diffs)
	t := &report.Table{Name: "likelihood",
		Title: fmt.Sprintf("## Test likelihood of the ε-network %s\n\nMeasured on %s, %s profile; `dfx reproduce mnist-model` in %.0f s. The first %d test images, dequantised (seed 2; the bpd is an upper bound): PF-ODE from t_min by dopri5 at rtol %g (%d model evaluations per batch of 50), trace %s. Solver error: the mean |Δbpd| per image against rtol %g. The skip mixture's bpd is exact (log q at t_min in closed form) on the same images; the difference is paired.",
			r.About, r.Machine, c.Profile, r.Seconds, c.Images, c.RTol, r.NFE, r.Trace, 10*c.RTol),
		Caption: "test bpd of the ε-network and of its skip mixture on the same images",
		Columns: []report.Column{{Name: "model"}, {Name: "test bpd", Format: "%.4f"}, {Name: "± SE", Format: "%.4f"}, {Name: "solver error (mean |Δ|)", Format: "%.4f"}}, Align: "lrrr"}
	t.Add(report.Text("ε-network "+c.Name), report.Float(m), report.Float(se), report.Float(solverErr))
	if r.Mixture != nil {
		mm, ms := stats.MeanSE(r.Mixture)
		t.Add(report.Text("its skip mixture (exact)"), report.Float(mm), report.Float(ms), report.Text("0 (closed form)"))
		for i := range diffs {
			diffs[i] = r.Mixture[i] - r.BPD[i]
		}
		dm, ds := stats.MeanSE(diffs)
		// a signed difference in a column of bpd: its sign is shown, its value stays a number in CSV
		t.Add(report.Text("mixture − network (paired; positive: the network is better)"), report.Text(fmt.Sprintf("%+.4f", dm)), report.Float(ds), report.None())
	}
	q := &report.Table{Name: "samples",
		Title:   fmt.Sprintf("## Samples of the ε-network\n\n%d per digit, DDIM with %d steps (seed %d), classifier-free guidance scale s (1: the conditional model); the skip mixture's exact samples beside them. Measures as in mnist-baselines: classifier and 5-NN agreement with the requested digit, the rms intensity of the 2-pixel frame (test images ≈ 0.029), the Fréchet distance in the classifier's features to the test images, the median distance to the nearest training image and the fraction of near-copies.", c.PerClass, c.Steps, c.Seed),
		Caption: "sample quality of the ε-network and of its skip mixture",
		Columns: []report.Column{{Name: "samples"}, {Name: "s"}, {Name: "classifier agreement", Format: "%.1f%%", Scale: 100}, {Name: "k-NN agreement", Format: "%.1f%%", Scale: 100},
			{Name: "frame rms", Format: "%.3f"}, {Name: "Fréchet distance", Format: "%.1f"}, {Name: "median nearest distance", Format: "%.2f"}, {Name: "near-copies", Format: "%.2f%%", Scale: 100}}, Align: "lrrrrrrr"}
	for _, s := range r.Quality {
		sc := report.None()
		if !math.IsNaN(s.Scale) {
			sc = report.Float(s.Scale)
		}
		q.Add(report.Text(s.Source), sc, report.Float(s.Q.ClassifierAgree), report.Float(s.Q.KNNAgree),
			report.Float(s.Q.FrameRMS), report.Float(s.Q.FD), report.Float(s.Q.NearestMedian), report.Float(s.Q.Copies))
	}
	rep := &report.Report{Name: "mnist-model", Title: "The MNIST ε-network: test likelihood and samples", Tables: []*report.Table{t, q}}
	for i, s := range r.Quality {
		title := fmt.Sprintf("%s, guidance scale %g, DDIM %d", c.Name, s.Scale, c.Steps)
		if math.IsNaN(s.Scale) {
			title = "its skip mixture, exact samples"
		}
		grid := s.Grid
		rep.Figures = append(rep.Figures, &report.Figure{Name: fmt.Sprintf("samples_%d.png", i+1), Caption: "samples: " + title + " (one row per digit; intensities clipped to [−1, 1])",
			Render: func(format string) ([]byte, error) {
				p, err := ImageGrid("samples: "+title, "sample", "digit (row)", grid, nil)
				if err != nil {
					return nil, err
				}
				return plotx.Bytes(p, vg.Length(max(len(grid[0]), 9))*0.55*vg.Inch+1.3*vg.Inch, 10*0.55*vg.Inch+1.1*vg.Inch, format)
			}})
	}
	return rep, nil
}
