package mnist

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// Density guidance on MNIST (issue 24): unconditional PF-ODE samples whose
// log-density follows a target (dfx/pfode DensityGuide), steered and
// tracked with a trace estimator of the network, or exactly with a
// Gaussian mixture.

// DensityTraces are the trace estimators density guidance can steer a
// network with: DF-TM and centred DF-TM (one fused pass of ε_θ, t_θ, ν_θ),
// Hutchinson with K Rademacher probes ("hutchinson:K"), for a network with
// a mixture skip the skip's exact trace plus Hutchinson-K on the residual
// ("skip-hutchinson:K", a control variate: the residual's variance alone),
// and the exact VJP trace (d vector-Jacobian products per point).
var DensityTraces = []string{"df-tm", "df-tm-c", "hutchinson:K", "skip-hutchinson:K", "vjp"}

// TraceForms lists the trace names for messages.
const TraceForms = "df-tm, df-tm-c, vjp, hutchinson:K or skip-hutchinson:K"

// CheckTrace checks a trace name (one of DensityTraces) without a network:
// it returns Hutchinson's K (0 for the others).
func CheckTrace(name string) (int, error) {
	switch {
	case name == "df-tm" || name == "df-tm-c" || name == "vjp":
		return 0, nil
	case strings.HasPrefix(name, "hutchinson:") || strings.HasPrefix(name, "skip-hutchinson:"):
		_, arg, _ := strings.Cut(name, ":")
		k, err := strconv.Atoi(arg)
		if err == nil && k >= 1 && k <= 1024 {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown trace %q (want %s, with K in 1…1024)", name, TraceForms)
}

// TraceModel is the unconditional network with the named trace estimator
// as a score.Model (one of DensityTraces; seed seeds Hutchinson's probes).
func (n *Networks) TraceModel(name string, seed uint64) (score.Model, error) {
	k, err := CheckTrace(name)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	switch {
	case name == "df-tm" || name == "df-tm-c":
		f, err := newFused(n.Net)
		if err != nil {
			return nil, err
		}
		kind := traceDFTM
		if name == "df-tm-c" {
			kind = traceDFTMC
		}
		return dynamics{f: f, kind: kind}, nil
	case name == "vjp":
		est, err := access.NewVJPTrace(n.Net, access.PromptRows(Dim))
		if err != nil {
			return nil, err
		}
		return access.NetModel{Net: n.Net, Trace: est}, nil
	case strings.HasPrefix(name, "skip-"):
		if !models.HasNetwork(n.Store, models.MixtureScope) {
			return nil, fmt.Errorf("mnist: trace %s needs an ε-network with a mixture skip; this one has none (use hutchinson:%d)", name, k)
		}
		cv, _, err := models.SkipControlVariate(n.Backend, n.Store, Schedule(), n.Net.DType, k, seed)
		if err != nil {
			return nil, err
		}
		return access.NetModel{Net: n.Net, Trace: cv}, nil
	case k > 0:
		est, err := access.NewHutchinson(n.Net, k, access.Rademacher, seed)
		if err != nil {
			return nil, err
		}
		return access.NetModel{Net: n.Net, Trace: est}, nil
	}
	return nil, fmt.Errorf("mnist: unknown trace %q", name)
}

// DensityConfig is how DensitySample integrates: RK4 with Steps steps
// uniform in log-SNR from T = 1 to t_min (geometric in t near t_min, where
// the PF-ODE is stiff; a σ-spaced grid such as Karras' takes its first
// step from t = 1 to 0.5 on the VP schedule, where σ hardly changes, and
// the guided samples' ℓ lost 200 nats there); no guidance below Until.
type DensityConfig struct {
	Steps int
	Until float64
}

// DensityRun is one batch of density-guided samples.
type DensityRun struct {
	X *mat.Dense // the samples at t_min [B, 784], not clipped
	// Ell is the tracked log q_{t_min}(x) [B]: the start plus the
	// integrated rate, exact when the trace is.
	Ell   []float64
	Guide pfode.DensityGuide // its statistics
	NFE   int
	Time  time.Duration
}

// densityGrid is the log-SNR grid from T to t_min.
func densityGrid(steps int) ([]float64, error) {
	tMin, tMax := Schedule().Interval()
	return schedule.TimeGrid(Schedule(), schedule.GridLogSNR, tMin, tMax, steps)
}

// DensitySample integrates the density-guided PF-ODE of model m from the
// points xT at T = 1, whose log q_1 (or its estimate, the prior's) is
// start, to t_min, with target (nil: unguided, ℓ still tracked). obs, if
// not nil, is called at every grid time with the tracked ℓ and the points
// x_t [B, 784] (a view of the solver's state: copy what is kept).
func DensitySample(ctx context.Context, m score.Model, target pfode.DensityTarget, xT *mat.Dense, start []float64, cfg DensityConfig, obs func(t float64, ell []float64, x *mat.Dense)) (*DensityRun, error) {
	b, d := xT.Dims()
	if cfg.Steps < 1 || len(start) != b {
		return nil, fmt.Errorf("mnist: density sampling needs Steps ≥ 1 and one start value per point (%d steps, %d values, %d points)", cfg.Steps, len(start), b)
	}
	// bound to ctx, an evaluation (e.g. d VJPs of an exact trace) stops inside too
	sys := pfode.New(schedule.Continuous{Schedule: Schedule()}, score.WithContext(ctx, m), b, d, pfode.LogDensity)
	gd := &pfode.DensityGuide{Target: target, Start: start, Until: cfg.Until}
	sys.Guide = gd
	y := sys.Init(xT, nil)
	ellOf := func(y []float64) []float64 {
		e := append([]float64(nil), sys.LogDensity(y)...)
		floats.Add(e, start)
		return e
	}
	grid, err := densityGrid(cfg.Steps)
	if err != nil {
		return nil, err
	}
	var o pfode.Observer
	if obs != nil {
		obs(grid[0], ellOf(y), sys.X(y))
		o = func(_ int, t float64, y []float64) error { obs(t, ellOf(y), sys.X(y)); return nil }
	}
	t0 := time.Now()
	st, err := pfode.Solve(ctx, sys, pfode.RK4, grid, y, o)
	if err != nil {
		return nil, err
	}
	return &DensityRun{X: mat.DenseCopyOf(sys.X(y)), Ell: ellOf(y), Guide: *gd, NFE: st.NFE, Time: time.Since(t0)}, nil
}

// PriorStart is log N(x; 0, σ_1² I) of each row: where a network's ℓ starts
// (the prior stands in for q_1).
func PriorStart(xT *mat.Dense) []float64 {
	_, tMax := Schedule().Interval()
	c, _ := schedule.At(Schedule(), tMax)
	return schedule.PriorLogProb(c, xT)
}

// ReferenceLevels are quantiles ps of log q_t(X_t), X_t ~ q_t, on the
// sampling grid, from an unguided batch: the PF-ODE carries q_1 to q_t, so
// the tracked ℓ of the batch's points at t are draws of log q_t(X_t) (with
// the model's trace, from the prior's log-density at T). That is how a
// network's levels are obtained without exact samples of q_t.
func ReferenceLevels(ctx context.Context, m score.Model, xT *mat.Dense, ps []float64, cfg DensityConfig) (*pfode.Quantiles, *DensityRun, error) {
	var times []float64
	var ells [][]float64
	run, err := DensitySample(ctx, m, nil, xT, PriorStart(xT), DensityConfig{Steps: cfg.Steps}, func(t float64, ell []float64, _ *mat.Dense) {
		times, ells = append(times, t), append(ells, ell)
	})
	if err != nil {
		return nil, nil, err
	}
	q, err := pfode.QuantilesOf(times, ells, ps, fmt.Sprintf("an unguided batch of %d prior draws carried along the PF-ODE (RK4, %d steps), ℓ from the prior's log-density and the model's trace", len(run.Ell), cfg.Steps))
	return q, run, err
}

// ParseDensityTarget reads "offset:P" (P nats per unit time, positive
// raises log q) or "quantile:p" (p in (0, 1)).
func ParseDensityTarget(s string) (kind string, v float64, err error) {
	k, val, ok := strings.Cut(s, ":")
	if ok {
		v, err = strconv.ParseFloat(val, 64)
	}
	switch {
	case !ok || err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return "", 0, fmt.Errorf("density target %q: want offset:P or quantile:p with a finite number", s)
	case k == "offset":
		return k, v, nil
	case k == "quantile" && v > 0 && v < 1:
		return k, v, nil
	}
	return "", 0, fmt.Errorf("density target %q: want offset:P, or quantile:p with p in (0, 1)", s)
}

// InkMass is the mean intensity in [0, 1] of each clipped image;
// Detail the mean absolute difference between neighbouring pixels (total
// variation per pixel pair), in [0, 1] units.
func InkMass(x *mat.Dense) []float64 {
	n, _ := x.Dims()
	out := make([]float64, n)
	for i := range n {
		for _, v := range x.RawRowView(i)[:Dim] {
			out[i] += unit(v) / Dim
		}
	}
	return out
}

// Detail is the mean |difference| of horizontally and vertically
// neighbouring pixels of each clipped image, in [0, 1] units.
func Detail(x *mat.Dense) []float64 {
	n, _ := x.Dims()
	out := make([]float64, n)
	const pairs = 2 * 28 * 27
	for i := range n {
		r := x.RawRowView(i)
		for y := range 28 {
			for c := range 28 {
				if c < 27 {
					out[i] += math.Abs(unit(r[y*28+c+1])-unit(r[y*28+c])) / pairs
				}
				if y < 27 {
					out[i] += math.Abs(unit(r[(y+1)*28+c])-unit(r[y*28+c])) / pairs
				}
			}
		}
	}
	return out
}

// unit maps a pixel in [−1, 1] (clipped) to [0, 1].
func unit(v float64) float64 { return (math.Max(-1, math.Min(1, v)) + 1) / 2 }

// DensityExplore is one target's density-guided samples beside the
// unguided ones from the same noise (the notebook's knobs).
type DensityExplore struct {
	Target, Trace string
	Until         float64
	Level         float64 // the quantile level in bpd (NaN for an offset)
	// Unguided and Guided images (clipped) and their tracked bpd.
	Unguided, Guided       *mat.Dense
	BPDUnguided, BPDGuided []float64
	Seconds                float64
}

// ExploreDensity draws n unconditional samples (RK4, steps steps) with and
// without density guidance to target (ParseDensityTarget's form), steered
// and tracked with the named trace (TraceModel); a quantile's level comes
// from ref unguided samples (ReferenceLevels).
func ExploreDensity(ctx context.Context, nets *Networks, target, trace string, until float64, n, steps, ref int, seed uint64) (*DensityExplore, error) {
	kind, v, err := ParseDensityTarget(target)
	if err != nil {
		return nil, err
	}
	m, err := nets.TraceModel(trace, seed)
	if err != nil {
		return nil, err
	}
	cfg := DensityConfig{Steps: steps, Until: until}
	res := &DensityExplore{Target: target, Trace: trace, Until: until, Level: math.NaN()}
	var tg pfode.DensityTarget = pfode.Offset{PerUnitTime: v}
	if kind == "quantile" {
		q, _, err := ReferenceLevels(ctx, m, InitialNoise(seed+1, 0, ref), []float64{v}, cfg)
		if err != nil {
			return nil, err
		}
		tg, res.Level = q.Level(0, 10), BitsPerDim(q.Values[len(q.Values)-1][0])
	}
	xT := InitialNoise(seed, 0, n)
	t0 := time.Now()
	for i, target := range []pfode.DensityTarget{nil, tg} {
		run, err := DensitySample(ctx, m, target, xT, PriorStart(xT), cfg, nil)
		if err != nil {
			return nil, err
		}
		bpd := make([]float64, n)
		for k, e := range run.Ell {
			bpd[k] = BitsPerDim(e)
		}
		if i == 0 {
			res.Unguided, res.BPDUnguided = Clip(run.X), bpd
		} else {
			res.Guided, res.BPDGuided = Clip(run.X), bpd
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// Report is the two rows of images with their tracked bpd, and a table of
// the means with ink and detail.
func (r *DensityExplore) Report() (*report.Report, error) {
	row := func(name string, x *mat.Dense, bpd []float64) []report.Cell {
		m, se := stats.MeanSE(bpd)
		return []report.Cell{report.Text(name), report.FloatSE(m, se), report.Float(mean(InkMass(x))), report.Float(mean(Detail(x))), report.Float(FrameRMS(x))}
	}
	title := fmt.Sprintf("### Density guidance %s with the %s trace", r.Target, r.Trace)
	if !math.IsNaN(r.Level) {
		title += fmt.Sprintf(" (level %.4f bpd)", r.Level)
	}
	t := &report.Table{Name: "density", Title: title,
		Columns: []report.Column{{Name: "sampler"}, {Name: "tracked bpd", Format: "%.4f"}, {Name: "ink", Format: "%.3f"}, {Name: "detail", Format: "%.4f"}, {Name: "frame rms", Format: "%.3f"}},
		Cells:   [][]report.Cell{row("unguided", r.Unguided, r.BPDUnguided), row("guided", r.Guided, r.BPDGuided)},
		Notes:   []string{fmt.Sprintf("Same noise for both rows; tracked bpd: the log-density the %s trace integrates along the path (%.1f s for both rows).", r.Trace, r.Seconds)}}
	fig := &report.Figure{Name: "density.png", Caption: "unguided (top) and density-guided (bottom) samples from the same noise, tracked bpd under each",
		Render: func(format string) ([]byte, error) {
			return imageRow(fmt.Sprintf("density %s (%s trace): unguided (top), guided (bottom)", r.Target, r.Trace), "seed", []string{"unguided", "guided"},
				[][]*mat.Dense{rowsOf(r.Unguided), rowsOf(r.Guided)}, [][]float64{r.BPDUnguided, r.BPDGuided}, format)
		}}
	return &report.Report{Name: "density-explore", Tables: []*report.Table{t}, Figures: []*report.Figure{fig}}, nil
}
