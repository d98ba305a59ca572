package access

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	dfxaccess "github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/draw"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/problem"
)

// ExactModelConfig sets the exact-model study: the estimators run on a
// network whose diffusion Fisher is known exactly at image scale.
type ExactModelConfig struct {
	Profile report.Profile
	Fit     mixture.FitOptions // the mixture (10 per digit, rank 64, in the full profile)
	Classes int                // classes of a per-class fit (MNIST: 10)
	Queries int                // test images per time
	Times   []float64
	Seed    uint64
}

// ExactModelFull and ExactModelQuick are the two profiles.
func ExactModelFull() ExactModelConfig {
	fit := mixture.FitOptions{Components: 10, PerClass: true, Rank: 64, Shrink: 0.2, Idle: 1e-4, Seed: 1} // the committed skip mixture's
	return ExactModelConfig{Profile: report.Full, Fit: fit, Classes: 10, Queries: 32, Times: []float64{0.01, 0.05, 0.1, 0.3, 0.6, 1}, Seed: 1}
}

func ExactModelQuick() ExactModelConfig {
	return ExactModelConfig{Profile: report.Quick, Fit: mixture.FitOptions{Components: 1, PerClass: true, Rank: 16, Shrink: 0.2, Idle: 1e-4, Seed: 1},
		Classes: 10, Queries: 4, Times: []float64{0.05, 0.5}, Seed: 1}
}

// ExactModelRow is one time of the study: mean relative errors against the
// exact answer of the mixture.
type ExactModelRow struct {
	T, Sigma   float64
	ExactTrace float64            // mean exact tr F
	TraceErr   map[string]float64 // mean |est − tr F| / tr F per trace estimator
	MatVecErr  map[string]float64 // mean ‖est − F v‖ / ‖F v‖ per operator (v ~ N(0, I))
	DeltaY     float64            // mean ‖ȳ_net − ȳ‖/‖ȳ‖: the float32 graph against float64
}

// ExactModelResult is the study.
type ExactModelResult struct {
	Config     ExactModelConfig
	Components int
	Traces     []string
	Operators  []string
	Rows       []ExactModelRow
	Elapsed    time.Duration
	Machine    string // where it ran
}

// RunExactModel is the exact-model study on MNIST: cfg.Fit fitted to the
// training images, queries from dequantised test images (ExactModel).
func RunExactModel(ctx context.Context, cfg ExactModelConfig, log io.Writer) (*ExactModelResult, error) {
	start := time.Now()
	g, err := mnist.FitMixtureContext(ctx, cfg.Fit)
	if err != nil {
		return nil, err
	}
	set, err := mnist.Load(mnist.Test)
	if err != nil {
		return nil, err
	}
	x0, err := set.Dequantized(0, cfg.Queries, cfg.Seed+10)
	if err != nil {
		return nil, err
	}
	res, err := ExactModel(ctx, mnist.Problem(), g, x0, cfg, log)
	if err != nil {
		return nil, err
	}
	res.Elapsed, res.Machine = time.Since(start), mnist.Machine()
	return res, nil
}

// ExactModel takes the Gaussian mixture g fitted to p's data as the network
// itself (models.MixtureEps: the untrained skip ε-network, float32 in the
// graph, unconditional), so that its diffusion Fisher is known exactly
// (mixture.Gaussian, float64) at p's dimension: every estimator's error here
// is the estimator's own, not a mismatch between a network and a reference
// density (the Dirac-mixture study's caveat). At each time, x_t = α x₀ + σ ε
// for the rows x₀ [Q, d]; DF-TM gets the exact E[‖x₀‖²|x_t]/d as its t_θ,
// so its error is what the α²/σ⁴ factor makes of the graph's float32
// denoiser; DF-EA's endpoint is the query's own x₀.
func ExactModel(ctx context.Context, p *problem.Problem, g *mixture.Gaussian, x0 *mat.Dense, cfg ExactModelConfig, log io.Writer) (*ExactModelResult, error) {
	start := time.Now()
	classes := 0
	if cfg.Fit.PerClass {
		classes = cfg.Classes
	}
	net, err := mixtureNet(g, p.Schedule, classes)
	if err != nil {
		return nil, err
	}
	var est exactModelEstimators
	env := dfxaccess.Env{Net: net, Seed: cfg.Seed, ExactRows: p.Dim}
	if est.vjp, err = dfxaccess.NewTrace("vjp-exact", env); err != nil {
		return nil, err
	}
	if est.h16, err = dfxaccess.NewTrace("hutchinson-16", env); err != nil {
		return nil, err
	}
	if est.mv, err = dfxaccess.NewOperator("vjp-matvec", env); err != nil {
		return nil, err
	}
	res := &ExactModelResult{Config: cfg, Components: g.Components(), Traces: []string{est.vjp.Name(), est.h16.Name(), dftmExactName},
		Operators: []string{est.mv.Name(), dfeaEndpointName}}
	rng := rand.New(rand.NewPCG(cfg.Seed, 91))
	for _, t := range cfg.Times {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := schedule.At(p.Schedule, t)
		if err != nil {
			return nil, err
		}
		x, v := draw.Queries(c, x0, rng)
		row, err := est.scoreAt(g, net, c, x0, x, v)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "exact model: t = %g: exact tr F %.4g, vjp %.2g, hutchinson-16 %.2g, df-tm %.2g; F v: vjp %.2g, df-ea %.2g\n", t, row.ExactTrace,
			row.TraceErr[est.vjp.Name()], row.TraceErr[est.h16.Name()], row.TraceErr[dftmExactName], row.MatVecErr[est.mv.Name()], row.MatVecErr[dfeaEndpointName])
		res.Rows = append(res.Rows, row)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// The names of the two estimators built from the exact mixture's own
// quantities rather than from the network's derivatives.
const (
	dftmExactName    = "df-tm (exact t*)"
	dfeaEndpointName = "df-ea (endpoint x₀)"
)

// mixtureNet is the fitted mixture g as a float32 ε-network on schedule s
// (the mixture skip alone, class-conditional with classes > 0, queried
// without a class).
func mixtureNet(g *mixture.Gaussian, s schedule.Schedule, classes int) (*dfxaccess.Net, error) {
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	store := model.NewStore()
	store.SetParams(map[string]any{models.ParamDType: "float32", models.ParamNumClasses: classes})
	if err := models.SetMixtureSkip(store, g); err != nil {
		return nil, err
	}
	nc := model.GetRootParamOr(store, models.ParamNumClasses, 0)
	eps := func(scope *model.Scope, x, a, s *graph.Node) *graph.Node {
		in := models.Inputs{X: x, Alpha: a, Sigma: s}
		if nc > 0 {
			in.Class = graph.AddScalar(graph.ConvertDType(graph.ZerosLike(a), dtypes.Int32), float64(nc))
		}
		return models.MixtureEps(scope, in)
	}
	return dfxaccess.NewNet(backend, store, s, dtypes.Float32, dfxaccess.Network{Eps: eps}), nil
}

// exactModelEstimators are the network-derivative estimators scored
// against the mixture.
type exactModelEstimators struct {
	vjp, h16 score.TraceEstimator
	mv       score.FisherOperator
}

// scoreAt is one time's row: the exact trace and each estimator's mean
// relative error against the mixture g at the queries x (noised from x0)
// and vectors v.
func (est exactModelEstimators) scoreAt(g *mixture.Gaussian, net *dfxaccess.Net, c schedule.Coefficients, x0, x, v *mat.Dense) (ExactModelRow, error) {
	q, d := x.Dims()
	ex, err := g.Eval(mixture.Query{At: c, X: x, V: v, Want: mixture.Trace | mixture.MatVec | mixture.Denoiser | mixture.SecondMoment})
	if err != nil {
		return ExactModelRow{}, err
	}
	row := ExactModelRow{T: c.T, Sigma: c.Sigma, TraceErr: map[string]float64{}, MatVecErr: map[string]float64{}}
	for i := range q {
		row.ExactTrace += ex.Trace[i] / float64(q)
	}
	yb, err := net.DenoiserAt(c, x)
	if err != nil {
		return ExactModelRow{}, err
	}
	for i := range q {
		row.DeltaY += stats.RelNorm(yb.RawRowView(i), ex.Denoiser.RawRowView(i)) / float64(q)
	}
	traces := map[string][]float64{}
	for _, e := range []score.TraceEstimator{est.vjp, est.h16} {
		if traces[e.Name()], err = e.Trace(c, x); err != nil {
			return ExactModelRow{}, err
		}
	}
	dftm := make([]float64, q) // d/σ² − (α²/σ⁴)(d t* − ‖ȳ_net‖²)
	s2 := c.Sigma * c.Sigma
	for i := range q {
		yy := 0.0
		for _, y := range yb.RawRowView(i) {
			yy += y * y
		}
		dftm[i] = float64(d)/s2 - c.Alpha*c.Alpha/(s2*s2)*(ex.SecondMoment[i]-yy)
	}
	traces[dftmExactName] = dftm
	for name, tr := range traces {
		for i := range q {
			row.TraceErr[name] += math.Abs(tr[i]-ex.Trace[i]) / math.Abs(ex.Trace[i]) / float64(q)
		}
	}
	st := score.State{At: c, X: x, Denoiser: yb, Endpoint: x0}
	mvs := map[string]*mat.Dense{}
	if mvs[est.mv.Name()], err = est.mv.Apply(st, v); err != nil {
		return ExactModelRow{}, err
	}
	if mvs[dfeaEndpointName], err = dfxaccess.DFEAApply(yb, x0, v, c.Alpha, c.Sigma); err != nil {
		return ExactModelRow{}, err
	}
	for name, m := range mvs {
		for i := range q {
			row.MatVecErr[name] += stats.RelNorm(m.RawRowView(i), ex.MatVec.RawRowView(i)) / float64(q)
		}
	}
	return row, nil
}

// Report implements report.Result.
func (r *ExactModelResult) Report() (*report.Report, error) {
	fit := r.Config.Fit
	t := &report.Table{Name: "exact_model",
		Title: fmt.Sprintf("## Every estimator on an image-scale model whose Fisher is known exactly\n\n"+
			"Measured on %s, %s profile; `dfx reproduce mnist-exact-model` in %.0f s. "+
			"The model is a Gaussian mixture fitted to MNIST (%d components, %d per class, rank %d + rest + idle pixels) run as a network: "+
			"its ε in the graph (float32, unconditional) is models.MixtureEps; mixture.Gaussian gives its exact Fisher in float64. "+
			"%d queries per time, x_t = α x₀ + σ ε from dequantised test images x₀. Errors are means over the queries: "+
			"|est − tr F| / tr F for traces, ‖est − F v‖ / ‖F v‖ for products with v ~ N(0, I). NOTES.md has their reading.",
			r.Machine, r.Config.Profile, r.Elapsed.Seconds(), r.Components, fit.Components, fit.Rank, r.Config.Queries),
		Caption: "every trace estimator and Fisher product against the exact Fisher of a fitted Gaussian mixture run as an image-scale network",
		Columns: []report.Column{{Name: "t"}, {Name: "σ", Format: "%.3g"}, {Name: "exact tr F (mean)", Format: "%.4g"}}, Align: "rrr"}
	rel := func(name string) report.Column { return report.Column{Name: name, Format: "%.2e"} }
	for _, n := range r.Traces {
		t.Columns, t.Align = append(t.Columns, rel(n+" (trace)")), t.Align+"r"
	}
	for _, n := range r.Operators {
		t.Columns, t.Align = append(t.Columns, rel(n+" (F v)")), t.Align+"r"
	}
	t.Columns, t.Align = append(t.Columns, rel("‖ȳ_graph − ȳ‖/‖ȳ‖")), t.Align+"r"
	for _, row := range r.Rows {
		cells := []report.Cell{report.Float(row.T), report.Float(row.Sigma), report.Float(row.ExactTrace)}
		for _, n := range r.Traces {
			cells = append(cells, report.Float(row.TraceErr[n]))
		}
		for _, n := range r.Operators {
			cells = append(cells, report.Float(row.MatVecErr[n]))
		}
		t.Add(append(cells, report.Float(row.DeltaY))...)
	}
	t.Notes = append(t.Notes,
		"DF-TM (exact t*) is DF-TM given the exact E[‖x₀‖²|x_t]/d as t_θ; DF-EA (endpoint x₀) uses the query's own x₀ as x̂₀.")
	return &report.Report{Name: "mnist-exact-model", Title: "Estimators on an image-scale model with an exact Fisher", Tables: []*report.Table{t}}, nil
}
