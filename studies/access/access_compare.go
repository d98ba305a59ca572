package access

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/gomlx/compute/dtypes"
	"gonum.org/v1/gonum/mat"

	dfxaccess "github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/tensormat"
	"github.com/dfx-lab/dfx/models"
)

// AccessConfig configures the access-method comparison: a score network and
// a DF-TM network are trained on N Gaussian points in d dimensions (so q₀ is
// exactly a Dirac mixture), then every access method of dfx/access is timed
// and scored against the exact mixture Fisher at each time, evaluated in
// float64 by dfx/mixture. The "exact" rows are access.Mixture, the same
// closed forms as a GoMLX graph: their error is round-off, and anything more
// is a bug in one of the two.
type AccessConfig struct {
	Name         string // file stem of the outputs ("" : "access")
	Schedule     string // schedule.ByName, default parameters
	Dim, Points  int
	Times        []float64
	Queries      int // x_t per time, drawn from q_t
	Steps        int // training steps per network
	Width, Depth int
	HutchK       int  // Hutchinson probes
	HutchPPM     int  // Hutch++ matvecs
	EMA          bool // evaluate the EMA weights (decay 0.999: only for Steps ≫ 1000)
	Seed         uint64
}

// AccessQuick is the notebook/CI profile (seconds).
func AccessQuick() AccessConfig {
	return AccessConfig{Name: "access", Schedule: "vp", Dim: 8, Points: 8, Times: []float64{0.3, 0.6, 0.9}, Queries: 16,
		Steps: 400, Width: 64, Depth: 2, HutchK: 4, HutchPPM: 12, Seed: 1}
}

// AccessFull is the profile of the committed table.
func AccessFull() AccessConfig {
	return AccessConfig{Name: "access", Schedule: "vp", Dim: 64, Points: 32, Times: []float64{0.1, 0.3, 0.5, 0.7, 0.9}, Queries: 64,
		Steps: 4000, Width: 256, Depth: 3, HutchK: 16, HutchPPM: 48, EMA: true, Seed: 1}
}

// AccessRow is one method at one time.
type AccessRow struct {
	T, Sigma     float64
	Kind, Method string  // Kind: "trace" or "matvec"
	RelErr       float64 // mean over queries of |est − exact| / |exact| (norms for matvec)
	PerQuery     time.Duration
	VsExactVJP   float64 // time ÷ the exact VJP trace's time at the same t
}

// AccessResult is the result of RunAccess.
type AccessResult struct {
	Config AccessConfig
	Rows   []AccessRow
}

// RunAccess trains the networks and compares the methods.
func RunAccess(ctx context.Context, cfg AccessConfig) (*AccessResult, error) {
	s, err := schedule.ByName(cfg.Schedule, schedule.Params{})
	if err != nil {
		return nil, err
	}
	if cfg.Dim < 1 || cfg.Points < 1 || cfg.Queries < 1 || cfg.Steps < 1 {
		return nil, fmt.Errorf("toys: access comparison config needs positive Dim, Points, Queries, Steps: %+v", cfg)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 17))
	y := gaussianRows(rng, cfg.Points, cfg.Dim)
	net, err := trainAccessNet(ctx, cfg, s, y)
	if err != nil {
		return nil, err
	}
	m, err := newAccessMethods(net, s, y, cfg)
	if err != nil {
		return nil, err
	}
	res := &AccessResult{Config: cfg}
	for _, tm := range cfg.Times {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows, err := m.compare(s, tm, y, rng, cfg)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, rows...)
	}
	return res, nil
}

// trainAccessNet trains the score and DF-TM networks on the points y
// (repeated to at least 256 rows) and returns them as an access.Net.
func trainAccessNet(ctx context.Context, cfg AccessConfig, s schedule.Schedule, y [][]float64) (*dfxaccess.Net, error) {
	data := make([][]float64, 0, 256)
	for i := range max(256, cfg.Points) {
		data = append(data, y[i%cfg.Points])
	}
	mctx := models.NewStore()
	mctx.SetParams(map[string]any{models.ParamWidth: cfg.Width, models.ParamDepth: cfg.Depth,
		models.ParamCosineSteps: cfg.Steps, models.ParamSeed: int(cfg.Seed), models.ParamBatchSize: 128})
	tb := models.MustNewTrainBackend()
	for _, obj := range []models.Objective{models.DSM, models.DFTM} {
		tr, err := models.NewTrainer(tb, mctx, s, obj, data, nil)
		if err != nil {
			return nil, err
		}
		if _, err := tr.Run(ctx, models.Loop{To: int64(cfg.Steps)}); err != nil {
			return nil, err
		}
	}
	if cfg.EMA {
		var err error
		if mctx, err = models.EMAStore(mctx); err != nil {
			return nil, err
		}
	}
	return models.NewAccessNet(models.MustNewBackend(), mctx, s, true)
}

// accessMethods are the compared trace estimators and Fisher operators
// (dfx/access's registry, then the exact closed form), in table order, and
// the float64 ground truth.
type accessMethods struct {
	traces []score.TraceEstimator // the first is the exact VJP trace, the time reference
	ops    []score.FisherOperator
	ref    *mixture.Dirac
}

func newAccessMethods(net *dfxaccess.Net, s schedule.Schedule, y [][]float64, cfg AccessConfig) (*accessMethods, error) {
	ym := tensormat.Rows(y)
	mix, err := dfxaccess.NewMixture(net.Backend, s, dtypes.Float64, ym)
	if err != nil {
		return nil, err
	}
	m := &accessMethods{}
	if m.ref, err = mixture.NewDirac(ym, nil); err != nil { // the ground truth, independent of the graphs
		return nil, err
	}
	env := dfxaccess.Env{Net: net, Seed: cfg.Seed}
	for _, spec := range []string{"vjp-exact", fmt.Sprintf("hutchinson-%d", cfg.HutchK), fmt.Sprintf("hutch++-%d", cfg.HutchPPM), "df-tm"} {
		e, err := dfxaccess.NewTrace(spec, env)
		if err != nil {
			return nil, err
		}
		m.traces = append(m.traces, e)
	}
	m.traces = append(m.traces, mix)
	for _, spec := range []string{"vjp-matvec", "df-ea"} {
		op, err := dfxaccess.NewOperator(spec, env)
		if err != nil {
			return nil, err
		}
		m.ops = append(m.ops, op)
	}
	m.ops = append(m.ops, mix)
	return m, nil
}

// compare draws cfg.Queries points near the data at time tm (and vectors
// v) and scores every method against the exact trace and F v.
func (m *accessMethods) compare(s schedule.Schedule, tm float64, y [][]float64, rng *rand.Rand, cfg AccessConfig) ([]AccessRow, error) {
	a, sg := s.Alpha(tm), s.Sigma(tm)
	v := tensormat.Rows(gaussianRows(rng, cfg.Queries, cfg.Dim))
	x, x0 := mat.NewDense(cfg.Queries, cfg.Dim, nil), mat.NewDense(cfg.Queries, cfg.Dim, nil)
	for q := range cfg.Queries {
		x0.SetRow(q, y[rng.IntN(cfg.Points)])
		for j := range cfg.Dim {
			x.Set(q, j, a*x0.At(q, j)+sg*rng.NormFloat64())
		}
	}
	at, err := schedule.At(s, tm)
	if err != nil {
		return nil, err
	}
	exact, err := m.ref.Eval(mixture.Query{At: at, X: x, V: v, Want: mixture.Trace | mixture.MatVec})
	if err != nil {
		return nil, err
	}
	var rows []AccessRow
	var vjpTime time.Duration
	for k, e := range m.traces {
		var got []float64
		el, err := timed(func() (err error) { got, err = e.Trace(at, x); return })
		if err != nil {
			return nil, err
		}
		if k == 0 {
			vjpTime = el
		}
		var rel float64
		for q := range cfg.Queries {
			rel += math.Abs(got[q]-exact.Trace[q]) / math.Abs(exact.Trace[q]) / float64(cfg.Queries)
		}
		rows = append(rows, AccessRow{tm, sg, "trace", e.Name(), rel, el / time.Duration(cfg.Queries), float64(el) / float64(vjpTime)})
	}
	state := score.State{At: at, X: x, Endpoint: x0}
	for _, op := range m.ops {
		var got *mat.Dense
		el, err := timed(func() (err error) { got, err = op.Apply(state, v); return })
		if err != nil {
			return nil, err
		}
		var rel float64
		for q := range cfg.Queries {
			rel += stats.RelNorm(got.RawRowView(q), exact.MatVec.RawRowView(q)) / float64(cfg.Queries)
		}
		rows = append(rows, AccessRow{tm, sg, "matvec", op.Name(), rel, el / time.Duration(cfg.Queries), float64(el) / float64(vjpTime)})
	}
	return rows, nil
}

// timed runs f twice (the first call compiles its graph) and returns the second call's time.
func timed(f func() error) (time.Duration, error) {
	if err := f(); err != nil {
		return 0, err
	}
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func gaussianRows(rng *rand.Rand, n, d int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, d)
		for j := range out[i] {
			out[i][j] = rng.NormFloat64()
		}
	}
	return out
}

// Tables are the comparison as one table named Config.Name: Markdown
// rounded, with its note; CSV in full precision, times in seconds.
func (r *AccessResult) Tables() []*report.Table {
	c := r.Config
	t := &report.Table{Name: c.name(),
		Title: fmt.Sprintf("# Fisher access methods vs the exact Dirac-mixture Fisher (%s, d = %d, N = %d, %d queries, %d training steps)",
			c.Schedule, c.Dim, c.Points, c.Queries, c.Steps),
		Caption: fmt.Sprintf("relative error and cost of every Fisher access method against the exact Fisher, d = %d", c.Dim),
		Columns: []report.Column{
			{Name: "t"},
			{Name: "σ", Key: "sigma", Format: "%.3f"},
			{Name: "kind"},
			{Name: "method"},
			{Name: "mean relative error", Key: "rel_err", Format: "%.3g"},
			{Name: "time / query", Key: "time_per_query", Unit: "s"},
			{Name: "time ÷ exact VJP trace", Key: "vs_exact_vjp", Format: "%.3g"},
		},
		Notes: []string{"Errors are against the closed form of the data's Dirac mixture (Prop. analytic_dirac) evaluated in float64 by dfx/mixture; " +
			"`exact` is the same closed form as a GoMLX graph (access.Mixture), so its error is round-off. DF-EA uses the true endpoint x₀ of each query."}}
	for _, w := range r.Rows {
		t.Add(report.Float(w.T), report.Float(w.Sigma), report.Text(w.Kind), report.Text(w.Method),
			report.Float(w.RelErr), report.Duration(w.PerQuery), report.Float(w.VsExactVJP))
	}
	return []*report.Table{t}
}

// name is the file stem of the comparison's outputs.
func (c AccessConfig) name() string {
	if c.Name == "" {
		return "access"
	}
	return c.Name
}
