package likelihood

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
)

// The small runs behind the notebooks' knobs (dfx/notebook.Knobs): one
// setting at a time, seconds each on 2 cores, on the committed networks,
// each with a Report like every experiment's.

// SamplesResult is one class and guidance scale: images by DDIM with
// classifier-free guidance, scored by the classifier.
type SamplesResult struct {
	Class   int
	Scale   float64
	Steps   int
	Images  *mat.Dense // [n, 784], clipped to [−1, 1]
	LogP    []float64  // classifier log p(class | image), nats
	Correct int        // images the classifier reads as Class
	Elapsed time.Duration
}

// ExploreSamples draws n images of class at guidance scale (seeds
// seed…seed+n−1 as rows of InitialNoise) with steps DDIM steps.
func ExploreSamples(nets *mnist.Networks, class int, scale float64, n, steps int, seed uint64) (*SamplesResult, error) {
	if class < 0 || class > 9 || n < 1 {
		return nil, fmt.Errorf("mnist: samples of class %d, %d images", class, n)
	}
	start := time.Now()
	cls, sc := make([]int, n), make([]float64, n)
	for i := range cls {
		cls[i], sc[i] = class, scale
	}
	x, err := nets.Sample(mnist.SampleConfig{Steps: steps, Seed: seed}, cls, sc)
	if err != nil {
		return nil, err
	}
	x = mnist.Clip(x)
	lp, _, err := nets.Classifier.LogProbs(x)
	if err != nil {
		return nil, err
	}
	res := &SamplesResult{Class: class, Scale: scale, Steps: steps, Images: x, LogP: make([]float64, n)}
	for i := range n {
		row := lp.RawRowView(i)
		res.LogP[i] = row[class]
		if floats.MaxIdx(row) == class {
			res.Correct++
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// Report is a one-row table and the images with their log p(c|x).
func (r *SamplesResult) Report() (*report.Report, error) {
	n := len(r.LogP)
	m, se := stats.MeanSE(r.LogP)
	t := &report.Table{Name: "samples", Title: fmt.Sprintf("### Digit %d at guidance scale %g", r.Class, r.Scale),
		Columns: []report.Column{{Name: "class"}, {Name: "scale s"}, {Name: "images"}, {Name: "DDIM steps"},
			{Name: "mean log p(c|x) (nats)", Format: "%.3f"}, {Name: "± SE", Format: "%.3f"}, {Name: "classified as c"}, {Name: "time", Unit: "s", Format: "%.2f s"}},
		Align: "rrrrrrrr",
		Cells: [][]report.Cell{{report.Int(r.Class), report.Float(r.Scale), report.Int(n), report.Int(r.Steps),
			report.Float(m), report.Float(se), report.Text(fmt.Sprintf("%d / %d", r.Correct, n)), report.Float(r.Elapsed.Seconds())}},
		Notes: []string{"s = 0 is the unconditional model, s = 1 the conditional one, " +
			"s > 1 classifier-free guidance beyond it (ε̃ = ε(x, ∅) + s (ε(x, c) − ε(x, ∅)))."}}
	fig := &report.Figure{Name: "samples.png", Caption: "the samples, log p(c|x) under each",
		Render: func(format string) ([]byte, error) {
			return imageRow(fmt.Sprintf("digit %d, s = %g", r.Class, r.Scale), "seed", nil, [][]*mat.Dense{plotx.SplitRows(r.Images)}, [][]float64{r.LogP}, format)
		}}
	return &report.Report{Name: "samples", Tables: []*report.Table{t}, Figures: []*report.Figure{fig}}, nil
}

// FisherCompare scores the trace estimators and Fisher operators of the
// committed ε-network (and its t_θ, ν_θ) against the exact Fisher of the
// 60 000-image Dirac mixture of the training set, at one time, on test
// images noised to that time.
type FisherCompare struct {
	T, Sigma  float64
	Queries   int
	Exact     []float64 // exact tr F per query
	Estimates map[string][]float64
	Methods   []string // trace estimators, in order
	TraceSec  map[string]float64
	OpRelErr  map[string]float64 // mean ‖F_op v − F v‖ / ‖F v‖
	OpSec     map[string]float64
	Operators []string
	Chosen    string // the estimator drawn against the exact trace
}

// TraceMethods are the trace estimators FisherCompare scores (specs of
// dfx/access's registry): the exact trace by 784 VJPs and from the
// network's structure, Hutchinson, DF-TM and centred DF-TM.
var TraceMethods = []string{"vjp-exact", "hutchinson-16", "df-tm", "df-tm-c", "skip-exact"}

// FisherQueries are what ExploreFisher compares.
type FisherQueries struct {
	T       float64  // the time of the queries
	Images  int      // how many test images are noised into queries
	Methods []string // the trace estimators, specs of dfx/access's registry (nil: TraceMethods)
	Chosen  string   // the estimator drawn against the exact trace
	Seed    uint64   // the noise, the vectors v and Hutchinson's probes
}

// ExploreFisher compares every estimator of q.Methods and both Fisher
// products with the exact Fisher on q.Images noised test images at time
// q.T. mix is the training set's Dirac mixture (TrainingMixture), built
// once by the caller.
func ExploreFisher(nets *mnist.Networks, mix *mixture.Dirac, test *mnist.Set, fq FisherQueries) (*FisherCompare, error) {
	n := nets.Net
	t, q, seed, methods := fq.T, fq.Images, fq.Seed, fq.Methods
	if methods == nil {
		methods = TraceMethods
	}
	if !slices.Contains(methods, fq.Chosen) {
		return nil, fmt.Errorf("mnist: the chosen estimator %q is not one of %v", fq.Chosen, methods)
	}
	c, err := schedule.At(n.Schedule, t)
	if err != nil {
		return nil, err
	}
	x0, err := test.Scaled(0, q)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	x, v := mat.NewDense(q, mnist.Dim, nil), mat.NewDense(q, mnist.Dim, nil)
	for i := range q {
		for j := range mnist.Dim {
			x.Set(i, j, c.Alpha*x0.At(i, j)+c.Sigma*rng.NormFloat64())
			v.Set(i, j, rng.NormFloat64())
		}
	}
	ex, err := mix.Eval(mixture.Query{At: c, X: x, V: v, Want: mixture.Trace | mixture.MatVec})
	if err != nil {
		return nil, err
	}
	res := &FisherCompare{T: t, Sigma: c.Sigma, Queries: q, Exact: ex.Trace, Estimates: map[string][]float64{},
		TraceSec: map[string]float64{}, OpRelErr: map[string]float64{}, OpSec: map[string]float64{}, Chosen: fq.Chosen}
	for _, method := range methods {
		e, err := access.NewTrace(method, access.Env{Net: n, Seed: seed, ExactRows: mnist.Dim})
		if err != nil {
			return nil, fmt.Errorf("mnist: %w", err)
		}
		start := time.Now()
		got, err := e.Trace(c, x)
		if err != nil {
			return nil, fmt.Errorf("mnist: %s: %w", method, err)
		}
		res.Methods = append(res.Methods, method)
		res.Estimates[method] = got
		res.TraceSec[method] = time.Since(start).Seconds() / float64(q)
	}
	mv, err := access.NewVJPMatVec(n)
	if err != nil {
		return nil, err
	}
	// DF-EA's endpoint: the clean image each query was noised from (what a
	// guided sampler's inner solve predicts)
	ea, err := access.NewDFEA(n)
	if err != nil {
		return nil, err
	}
	for _, op := range []struct {
		name string
		op   score.FisherOperator
	}{{"vjp-matvec", mv}, {"df-ea", ea}} {
		start := time.Now()
		got, err := op.op.Apply(score.State{At: c, X: x, Endpoint: x0}, v)
		if err != nil {
			return nil, fmt.Errorf("mnist: %s: %w", op.name, err)
		}
		res.OpSec[op.name] = time.Since(start).Seconds() / float64(q)
		var rel float64
		for i := range q {
			d := make([]float64, mnist.Dim)
			floats.SubTo(d, got.RawRowView(i), ex.MatVec.RawRowView(i))
			rel += floats.Norm(d, 2) / floats.Norm(ex.MatVec.RawRowView(i), 2) / float64(q)
		}
		res.OpRelErr[op.name] = rel
		res.Operators = append(res.Operators, op.name)
	}
	return res, nil
}

// TrainingMixture is the exact data distribution of ExploreFisher: the
// Dirac mixture of the 60 000 training images (in [−1, 1]), and the test set.
func TrainingMixture() (*mixture.Dirac, *mnist.Set, error) {
	train, err := mnist.Load(mnist.Train)
	if err != nil {
		return nil, nil, err
	}
	test, err := mnist.Load(mnist.Test)
	if err != nil {
		return nil, nil, err
	}
	y, err := train.Scaled(0, train.Images.N)
	if err != nil {
		return nil, nil, err
	}
	mix, err := mixture.NewDirac(y, nil)
	if err != nil {
		return nil, nil, err
	}
	return mix, test, nil
}

// Report is the table of every estimator and operator and the chosen
// estimator against the exact trace.
func (r *FisherCompare) Report() (*report.Report, error) {
	exMean := stat.Mean(r.Exact, nil)
	t := &report.Table{Name: "fisher",
		Title: fmt.Sprintf("### Learned against exact Fisher at t = %g (σ = %.3g), %d noised test images", r.T, r.Sigma, r.Queries),
		Columns: []report.Column{{Name: "kind"}, {Name: "method"}, {Name: "mean relative error", Format: "%.3g"},
			{Name: "time per image", Unit: "s", Format: "%.4g ms", Scale: 1e3}}, Align: "llrr",
		Notes: []string{fmt.Sprintf("Exact: the Fisher of the 60 000-image Dirac mixture of the training set (mean tr F = %.4g). "+
			"Traces: |est − exact| / |exact|; products F v (v Gaussian): ‖est − exact‖ / ‖exact‖; "+
			"DF-EA at the clean image each query was noised from.", exMean)}}
	for _, m := range r.Methods {
		var rel float64
		for i, e := range r.Estimates[m] {
			rel += math.Abs(e-r.Exact[i]) / math.Abs(r.Exact[i]) / float64(len(r.Exact))
		}
		t.Add(report.Text("trace"), report.Text(m), report.Float(rel), report.Float(r.TraceSec[m]))
	}
	for _, o := range r.Operators {
		t.Add(report.Text("F v"), report.Text(o), report.Float(r.OpRelErr[o]), report.Float(r.OpSec[o]))
	}
	fig := &report.Figure{Name: "fisher.png", Caption: "the chosen estimator's tr F against the exact one, per image (the line is equality)",
		Render: func(format string) ([]byte, error) {
			est := r.Estimates[r.Chosen]
			if est == nil {
				return nil, fmt.Errorf("mnist: no estimator %q", r.Chosen)
			}
			lo, hi := math.Min(floats.Min(r.Exact), floats.Min(est)), math.Max(floats.Max(r.Exact), floats.Max(est))
			p, err := plotx.Lines(fmt.Sprintf("%s against the exact trace, t = %g", r.Chosen, r.T), "exact tr F", r.Chosen+" tr F",
				plotx.Series{Name: "x = y", X: []float64{lo, hi}, Y: []float64{lo, hi}},
				plotx.Series{Name: r.Chosen, X: sorted(r.Exact, est), Y: sortedBy(r.Exact, est), Points: true})
			if err != nil {
				return nil, err
			}
			return plotx.Bytes(p, 5*vg.Inch, 4*vg.Inch, format)
		}}
	return &report.Report{Name: "fisher", Tables: []*report.Table{t}, Figures: []*report.Figure{fig}}, nil
}

// imageRow draws rows of MNIST images with values under each, sized like
// the other image figures.
func imageRow(title, xlabel string, rowNames []string, rows [][]*mat.Dense, values [][]float64, format string) ([]byte, error) {
	return plotx.ImageRows(title, xlabel, rowNames, 28, 28, rows, values, format)
}

// sorted and sortedBy order the pairs (x[i], y[i]) by x, so that a series
// drawn with lines runs left to right.
func sorted(x, _ []float64) []float64 {
	out := append([]float64(nil), x...)
	floats.Argsort(out, make([]int, len(out)))
	return out
}

func sortedBy(x, y []float64) []float64 {
	k := append([]float64(nil), x...)
	idx := make([]int, len(k))
	floats.Argsort(k, idx)
	out := make([]float64, len(y))
	for i, j := range idx {
		out[i] = y[j]
	}
	return out
}

// LikelihoodDynamics is the PF-ODE likelihood's dynamics (dfx/likelihood)
// of the unconditional ε-network: score −ε_θ/σ and the trace by method, a
// spec of dfx/access's registry, e.g. one of TraceMethods (seed: Hutchinson's probes).
func LikelihoodDynamics(n *mnist.Networks, method string, seed uint64) (score.Model, error) {
	est, err := access.NewTrace(method, access.Env{Net: n.Net, Seed: seed, ExactRows: mnist.Dim})
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	return access.NetModel{Net: n.Net, Trace: est}, nil
}
