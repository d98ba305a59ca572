package likelihood

import (
	"context"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxlikelihood "github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
)

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

// traj generates unconditional samples with the PF-ODE (Heun, BPDSteps,
// from T down to the paper protocol's t₁, where DF-TM is usable) while
// integrating the log-density ODE with DF-TM (which adds only t_θ to the
// sampler's cost), then re-encodes each sample from t₁ to T with the same
// solver.
func (s study) traj(ctx context.Context) (*TrajResult, error) {
	f, err := access.NewFused(s.nets.Net)
	if err != nil {
		return nil, err
	}
	dyn := access.FusedModel{F: f, Trace: access.FusedDFTM}
	sch, cfg, d := s.p.Schedule, s.cfg, s.p.Dim
	_, tMax := sch.Interval()
	b := cfg.TrajSamples
	xT := s.p.InitialNoise(cfg.Seed+2000, 0, b)
	_, fine := protocols(sch, cfg)
	lc := dfxlikelihood.Config{Schedule: sch, T0: fine.T0, T1: tMax, Steps: cfg.BPDSteps, Solver: dfxlikelihood.Heun}
	grid, err := dfxlikelihood.Grid(lc, cfg.BPDSteps)
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
	plain := pfode.New(schedule.Continuous{Schedule: sch}, access.NetModel{Net: s.nets.Net}, b, d, 0)
	plain.Drive = score.WantEps
	if _, err := pfode.Solve(ctx, plain, pfode.Heun, down, plain.Init(xT, nil), nil); err != nil {
		return nil, err
	}
	res.SamplerOnlySecs = time.Since(start).Seconds() / float64(b)
	start = time.Now()
	sys := pfode.New(schedule.Continuous{Schedule: sch}, dyn, b, d, pfode.LogDensity)
	sys.Drive = score.WantScore
	y := sys.Init(xT, nil)
	if _, err := pfode.Solve(ctx, sys, pfode.Heun, down, y, nil); err != nil {
		return nil, err
	}
	res.TrajSecs = time.Since(start).Seconds() / float64(b)
	cT, err := schedule.At(sch, tMax)
	if err != nil {
		return nil, err
	}
	prior, delta := schedule.PriorLogProb(cT, xT), sys.LogDensity(y)
	logq := make([]float64, b)
	for i := range logq {
		logq[i] = prior[i] + delta[i]
	}
	if res.TrajBPDs, err = dfxlikelihood.BitsPerDim(logq, d, s.quant()); err != nil {
		return nil, err
	}
	return res, s.reencode(ctx, res, dyn, mat.DenseCopyOf(sys.X(y)), xT, lc)
}

// reencode fills res's re-encoding columns: the samples xs integrated
// back to T under lc, against their own trajectory's bpd and noise xT.
func (s study) reencode(ctx context.Context, res *TrajResult, dyn score.Model, xs, xT *mat.Dense, lc dfxlikelihood.Config) error {
	b, d := xs.Dims()
	start := time.Now()
	re, err := dfxlikelihood.LogProbContext(ctx, xs, dyn, lc)
	if err != nil {
		return err
	}
	res.ReSecs = time.Since(start).Seconds() / float64(b)
	if res.ReBPDs, err = dfxlikelihood.BitsPerDim(re.LogProb, d, s.quant()); err != nil {
		return err
	}
	res.TrajBPD, _ = stats.MeanSE(res.TrajBPDs)
	res.ReBPD, _ = stats.MeanSE(res.ReBPDs)
	for i := range b {
		diff := math.Abs(res.TrajBPDs[i] - res.ReBPDs[i])
		res.MeanAbsDiff += diff / float64(b)
		res.MaxAbsDiff = math.Max(res.MaxAbsDiff, diff)
		var num, den float64
		for j := range d {
			e := re.XT.At(i, j) - xT.At(i, j)
			num += e * e
			den += xT.At(i, j) * xT.At(i, j)
		}
		res.XTRelErr += math.Sqrt(num/den) / float64(b)
	}
	return nil
}
