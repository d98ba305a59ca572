package model

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

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/problem"
)

// ModelEvalConfig says how RunModelEval evaluates one ε-network.
type ModelEvalConfig struct {
	Profile report.Profile
	// Name is the ε-network (-model) and Dir its folder (Env.Nets; "": the
	// committed networks), read by Lab.Network, as is the classifier.
	Dir, Name string
	// Checkpoint, when set, is a weights checkpoint file whose ε-network is
	// evaluated instead of Name's: e.g. a researcher's own network, which
	// dfx import wrote. Without a class input it is evaluated on the
	// likelihood part alone; without a mixture skip of its own, its
	// likelihood is shown beside the skip mixture of Name's network, a
	// closed-form reference on the same images.
	Checkpoint string
	// The likelihood: the first Images dequantised test images (seed 2),
	// dopri5 at RTol, and again at 10·RTol for the solver error; the trace
	// by Hutchinson with Probes Rademacher probes, on the residual only
	// (beside the skip's exact trace, access.ControlVariate) when the
	// network has a mixture skip.
	Images int
	Batch  int // images per solve (0: 50)
	RTol   float64
	Probes int
	// The samples: PerClass per digit, DDIM with Steps steps at each
	// classifier-free guidance scale of Scales (1: the conditional model).
	PerClass int
	Steps    int
	Scales   []float64
	Seed     uint64
	// Work, when set, is a folder that keeps the expensive parts
	// (internal/workstore; modelwork.go): the likelihood (a row per batch
	// in mnist-model-likelihood.json, saved after each, so that a run
	// resumes where an earlier one stopped) and the samples of each scale
	// (samples_s<scale>.idx, 8-bit IDX, described in
	// mnist-model-samples.json). A part found there, made with the same
	// settings and network, is read instead of computed: the likelihood and
	// the samples can be computed on a GPU machine and measured here. One
	// run at a time uses a folder (workstore.Lock): a second is refused
	// (ErrWork). The registered experiment sets it from Env.Work.
	Work string
	// Shard "k/n" (with Work) computes only the likelihood's batches whose
	// place is k−1 modulo n, into its own file of Work
	// (mnist-model-likelihood.shard-k-of-n.json, locked alone), so that
	// shards run side by side; it draws no samples and its result is
	// partial. A run without a shard then reads every file and completes
	// the experiment. "": the whole run.
	Shard string
	// Parts are the parts to compute (ParseModelParts; nil: all). Without
	// PartQuality the samples are drawn (and kept in Work) but not
	// measured: the classifier and the training images are not needed.
	Parts map[string]bool
}

func (c ModelEvalConfig) part(p string) bool { return c.Parts == nil || c.Parts[p] }

// shard is c's shard (the whole run when Shard is "" or malformed:
// checkModelEval refuses the latter).
func (c ModelEvalConfig) shard() workstore.Shard { return workstore.ShardOf(c.Shard) }

// ShardFile is the work file a shard keeps its batches in, and whether c
// is a shard: the CLI runs a shard without a report and names the file.
func (c ModelEvalConfig) ShardFile() (string, bool) {
	return workstore.ShardFile(c.Shard, likelihoodStem)
}

func (c ModelEvalConfig) batch() int {
	if c.Batch > 0 {
		return c.Batch
	}
	return 50
}

// ModelEvalFull and ModelEvalQuick are the two profiles, of the committed
// ε-network eps.
func ModelEvalFull() ModelEvalConfig {
	return ModelEvalConfig{Profile: report.Full, Name: "eps", Images: 1000, RTol: 1e-3, Probes: 4, PerClass: 1000, Steps: 50, Scales: []float64{1, 2}, Seed: 1}
}

func ModelEvalQuick() ModelEvalConfig {
	return ModelEvalConfig{Profile: report.Quick, Name: "eps", Images: 4, RTol: 1e-2, Probes: 1, PerClass: 2, Steps: 4, Scales: []float64{1}, Seed: 1}
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
	// on the same images (nil without one); MixtureAbout names that mixture.
	BPD, Coarse, Mixture []float64
	MixtureAbout         string
	NFE                  int // model evaluations per batch at RTol (mean)
	// Batches is the number of the likelihood's batches in BPD: all of them,
	// but for a shard's partial result.
	Batches int
	// Where the likelihood was computed (machine, backend, seconds): here,
	// or on the machines that kept it in Config.Work.
	LikelihoodMachine string
	LikelihoodSeconds float64
	Quality           []ModelQuality

	digest  string // the ε-network's (checkpoint.NetworkDigest)
	problem *problem.Problem
	lab     Lab
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
	_, d := x.Dims()
	var rows [][]*mat.Dense
	for c := range 10 {
		var row []*mat.Dense
		for j := 0; j < min(perClass, 10); j++ {
			row = append(row, mat.NewDense(1, d, mat.DenseCopyOf(x.Slice(c*perClass+j, c*perClass+j+1, 0, d)).RawRowView(0)))
		}
		rows = append(rows, row)
	}
	return rows
}

// RunModelEval measures the ε-network's test bpd (converged dopri5, solver
// error and trace estimator stated) and the quality of its samples, beside
// its skip mixture's exact bpd and exact samples.
func RunModelEval(ctx context.Context, p *problem.Problem, lab Lab, cfg ModelEvalConfig, log io.Writer) (*ModelEvalResult, error) {
	start := time.Now()
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	store, about, err := evalNetwork(p, lab, cfg)
	if err != nil {
		return nil, err
	}
	net, err := models.NewAccessNet(backend, store, p.Schedule, false)
	if err != nil {
		return nil, err
	}
	res := &ModelEvalResult{Config: cfg, Machine: mnist.Machine(), About: about, problem: p, lab: lab}
	trace, skip, err := evalTrace(store, net, cfg)
	if err != nil {
		return nil, err
	}
	res.Trace, res.MixtureAbout = trace.Name(), "its skip mixture"
	ref := skip
	if skip == nil && cfg.Checkpoint != "" {
		if ref, res.MixtureAbout, err = referenceMixture(lab, cfg); err != nil {
			return nil, err
		}
	}
	if res.digest, err = checkpoint.NetworkDigest(store, models.ScoreScope); err != nil {
		return nil, err
	}
	if err := cfg.checkShard(); err != nil {
		return nil, err
	}
	lock, err := workstore.Lock("mnist-model", cfg.Work, cfg.workLock(), cfg.workWhat(), log)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	if cfg.part(PartLikelihood) {
		if err := res.likelihood(ctx, backend, net, trace, ref, log); err != nil {
			return nil, err
		}
	}
	if !cfg.shard().Whole() {
		fmt.Fprintf(log, "mnist-model: shard %s done; %d of the likelihood's batches are in %s (run without a shard for the samples and the report)\n",
			cfg.Shard, res.Batches, cfg.Work)
	} else if cfg.part(PartSamples) || cfg.part(PartQuality) { // quality alone measures the samples kept in Work
		if err := res.samples(ctx, backend, store, skip, cfg, log); err != nil {
			return nil, err
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// evalTrace is Hutchinson with cfg.Probes probes on the network, or, when
// it has a mixture skip, the skip's exact trace plus Hutchinson on the
// residual (models.SkipHutchinsonTrace); it returns the skip too (nil:
// none).
func evalTrace(store *model.Store, net *access.Net, cfg ModelEvalConfig) (score.TraceEstimator, *mixture.Gaussian, error) {
	if !models.HasNetwork(store, models.MixtureScope) {
		t, err := access.NewHutchinson(net, cfg.Probes, access.Rademacher, cfg.Seed)
		return t, nil, err
	}
	h, err := models.NewSkipHutchinson(net, cfg.Probes, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	return h, h.Skip(), nil
}

// mixtureBPDAt is a mixture's exact bpd (log q at t_min) at the points x.
func mixtureBPDAt(p *problem.Problem, g *mixture.Gaussian, x *mat.Dense) ([]float64, error) {
	tMin, _ := p.Schedule.Interval()
	co, err := schedule.At(p.Schedule, tMin)
	if err != nil {
		return nil, err
	}
	r, err := g.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb})
	if err != nil {
		return nil, err
	}
	quant := quantization(p)
	return likelihood.BitsPerDim(r.LogProb, p.Dim, &quant)
}

// samples draws PerClass samples per digit from the network at each scale
// and from the skip mixture, and measures them.
func (res *ModelEvalResult) samples(ctx context.Context, backend compute.Backend, store *model.Store, skip *mixture.Gaussian,
	cfg ModelEvalConfig, log io.Writer) error {
	var ref *QualityRef
	if cfg.part(PartQuality) {
		cst, _, err := res.lab.Network(cfg.Dir, "classifier")
		if err != nil {
			return err
		}
		cls, err := models.NewClassifier(backend, cst, res.problem.Dim)
		if err != nil {
			return err
		}
		if ref, err = NewQualityRef(ctx, res.problem, res.lab, cls, min(10000, 100*cfg.PerClass)); err != nil {
			return err
		}
	}
	measure := func(x *mat.Dense, class []int) (*Quality, error) {
		if ref == nil {
			return &Quality{N: len(class), ClassifierAgree: math.NaN(), KNNAgree: math.NaN(), FD: math.NaN(), NearestMedian: math.NaN(),
				Copies: math.NaN(), FrameRMS: mnist.FrameRMS(x)}, nil
		}
		return ref.Measure(x, class)
	}
	n := 10 * cfg.PerClass
	class := make([]int, n)
	for i := range class {
		class[i] = i / cfg.PerClass
	}
	kept, err := openSamples(cfg.Work, samplesSettings{Network: cfg.label(), PerClass: cfg.PerClass, Steps: cfg.Steps, Seed: cfg.Seed},
		res.digest, backend.Name())
	if err != nil {
		return err
	}
	for _, s := range cfg.Scales {
		x, err := res.networkSamples(ctx, backend, store, kept, s, class, log)
		if err != nil {
			return err
		}
		q, err := measure(x, class)
		if err != nil {
			return err
		}
		res.Quality = append(res.Quality, ModelQuality{Source: "network", Scale: s, Q: q, Grid: gridOf(x, cfg.PerClass)})
		fmt.Fprintf(log, "mnist-model: %d samples at scale %g: classifier agreement %.1f%%, frame rms %.3f, FD %.1f\n",
			n, s, 100*q.ClassifierAgree, q.FrameRMS, q.FD)
	}
	if skip != nil {
		x, err := skipSamples(skip, cfg, res.problem.Dim)
		if err != nil {
			return err
		}
		q, err := measure(x, class)
		if err != nil {
			return err
		}
		res.Quality = append(res.Quality, ModelQuality{Source: "skip mixture (exact samples)", Scale: math.NaN(), Q: q, Grid: gridOf(x, cfg.PerClass)})
	}
	return nil
}

// networkSamples are the network's PerClass samples per digit (class, in
// digit order) at guidance scale s, 8-bit: read from cfg.Work when kept
// there, else drawn (and kept there).
func (res *ModelEvalResult) networkSamples(ctx context.Context, backend compute.Backend, store *model.Store, kept *samplesKept, s float64,
	class []int, log io.Writer) (*mat.Dense, error) {
	cfg, n := res.Config, len(class)
	x, err := kept.load(s)
	if err != nil {
		return nil, err
	}
	if x == nil && !cfg.part(PartSamples) {
		return nil, fmt.Errorf("mnist-model: the quality part measures the samples of %s, which are not there: compute them (part samples) first",
			kept.path(s))
	}
	if x != nil {
		fmt.Fprintf(log, "mnist-model: %d samples at scale %g read from %s\n", n, s, kept.path(s))
		return x, nil
	}
	scale := make([]float64, n)
	for i := range scale {
		scale[i] = s
	}
	t0 := time.Now()
	if x, err = res.lab.Sample(ctx, backend, store, cfg.Steps, cfg.Seed, class, scale); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "mnist-model: %d samples at scale %g drawn in %.0f s\n", n, s, time.Since(t0).Seconds())
	if x, err = eightBit(mnist.Clip(x)); err != nil {
		return nil, err
	}
	if cfg.Work != "" {
		if err := kept.save(s, x); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// skipSamples are PerClass exact samples per digit of the skip mixture
// (its class's components), 8-bit, [10·PerClass, d].
func skipSamples(skip *mixture.Gaussian, cfg ModelEvalConfig, d int) (*mat.Dense, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5a))
	x := mat.NewDense(10*cfg.PerClass, d, nil)
	for c := range 10 {
		smp, err := skip.Sample(rng, cfg.PerClass, c)
		if err != nil {
			return nil, err
		}
		x.Slice(c*cfg.PerClass, (c+1)*cfg.PerClass, 0, d).(*mat.Dense).Copy(smp)
	}
	return eightBit(mnist.Clip(x))
}

// eightBit is x rounded to 8-bit pixels (mnist.Quantize8) and scaled back to
// [−1, 1]: samples are measured as they are stored (IDX, PNG), whether
// drawn here or read from a work folder.
func eightBit(x *mat.Dense) (*mat.Dense, error) {
	b, _ := x.Dims()
	return scaled8(mnist.Quantize8(x), b)
}

// scaled8 is b rows of 8-bit pixels px scaled to x = p/127.5 − 1 ∈ [−1, 1].
func scaled8(px []uint8, b int) (*mat.Dense, error) {
	if b < 1 || len(px)%b != 0 {
		return nil, fmt.Errorf("model: %d pixels in %d rows", len(px), b)
	}
	out := mat.NewDense(b, len(px)/b, nil)
	raw := out.RawMatrix().Data
	for i, p := range px {
		raw[i] = float64(p)/127.5 - 1
	}
	return out, nil
}
