package density

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
)

// InkMass is the mean intensity in [0, 1] of each clipped image x [B, d]
// (pixels in [−1, 1]).
func InkMass(x *mat.Dense) []float64 {
	n, d := x.Dims()
	out := make([]float64, n)
	for i := range n {
		for _, v := range x.RawRowView(i) {
			out[i] += unit(v) / float64(d)
		}
	}
	return out
}

// Detail is the mean |difference| of horizontally and vertically
// neighbouring pixels of each clipped h × w image of x [B, h·w] (total
// variation per pixel pair), in [0, 1] units.
func Detail(x *mat.Dense, h, w int) []float64 {
	n, _ := x.Dims()
	out := make([]float64, n)
	pairs := float64(h*(w-1) + (h-1)*w)
	for i := range n {
		r := x.RawRowView(i)
		for y := range h {
			for c := range w {
				if c < w-1 {
					out[i] += math.Abs(unit(r[y*w+c+1])-unit(r[y*w+c])) / pairs
				}
				if y < h-1 {
					out[i] += math.Abs(unit(r[(y+1)*w+c])-unit(r[y*w+c])) / pairs
				}
			}
		}
	}
	return out
}

// unit maps a pixel in [−1, 1] (clipped) to [0, 1].
func unit(v float64) float64 { return (math.Max(-1, math.Min(1, v)) + 1) / 2 }

func mean(v []float64) float64 {
	m, _ := stats.MeanSE(v)
	return m
}

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
func ExploreDensity(ctx context.Context, nets *mnist.Networks, target, trace string, until float64, n, steps, ref int, seed uint64) (*DensityExplore, error) {
	kind, v, err := ParseDensityTarget(target)
	if err != nil {
		return nil, err
	}
	m, err := TraceModel(nets.Net, trace, seed, access.PromptRows(mnist.Dim))
	if err != nil {
		return nil, err
	}
	cfg := SampleConfig{Schedule: mnist.Schedule(), Grid: GridLogSNR, Steps: steps, Until: until}
	res := &DensityExplore{Target: target, Trace: trace, Until: until, Level: math.NaN()}
	var tg pfode.DensityTarget = pfode.Offset{PerUnitTime: v}
	if kind == "quantile" {
		q, _, err := ReferenceLevels(ctx, m, mnist.InitialNoise(seed+1, 0, ref), []float64{v}, cfg)
		if err != nil {
			return nil, err
		}
		tg, res.Level = q.Level(0, 10), BitsPerDim(mnist.Problem(), q.Values[len(q.Values)-1][0])
	}
	xT := mnist.InitialNoise(seed, 0, n)
	t0 := time.Now()
	for i, target := range []pfode.DensityTarget{nil, tg} {
		run, err := Sample(ctx, m, target, xT, PriorStart(cfg.Schedule, xT), cfg, nil)
		if err != nil {
			return nil, err
		}
		bpd := make([]float64, n)
		for k, e := range run.Ell {
			bpd[k] = BitsPerDim(mnist.Problem(), e)
		}
		if i == 0 {
			res.Unguided, res.BPDUnguided = mnist.Clip(run.X), bpd
		} else {
			res.Guided, res.BPDGuided = mnist.Clip(run.X), bpd
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
		return []report.Cell{report.Text(name), report.FloatSE(m, se), report.Float(mean(InkMass(x))), report.Float(mean(Detail(x, 28, 28))),
			report.Float(mnist.FrameRMS(x))}
	}
	title := fmt.Sprintf("### Density guidance %s with the %s trace", r.Target, r.Trace)
	if !math.IsNaN(r.Level) {
		title += fmt.Sprintf(" (level %.4f bpd)", r.Level)
	}
	t := &report.Table{Name: "density", Title: title,
		Columns: []report.Column{{Name: "sampler"}, {Name: "tracked bpd", Format: "%.4f"}, {Name: "ink", Format: "%.3f"}, {Name: "detail", Format: "%.4f"},
			{Name: "frame rms", Format: "%.3f"}},
		Cells: [][]report.Cell{row("unguided", r.Unguided, r.BPDUnguided), row("guided", r.Guided, r.BPDGuided)},
		Notes: []string{fmt.Sprintf("Same noise for both rows; tracked bpd: the log-density the %s trace integrates along the path (%.1f s for both rows).",
			r.Trace, r.Seconds)}}
	fig := &report.Figure{Name: "density.png", Caption: "unguided (top) and density-guided (bottom) samples from the same noise, tracked bpd under each",
		Render: func(format string) ([]byte, error) {
			p, err := mnist.ImageGrid(fmt.Sprintf("density %s (%s trace): unguided (top), guided (bottom)", r.Target, r.Trace), "seed", "",
				[][]*mat.Dense{plotx.SplitRows(r.Unguided), plotx.SplitRows(r.Guided)}, [][]float64{r.BPDUnguided, r.BPDGuided})
			if err != nil {
				return nil, err
			}
			mnist.LabelRows(p, []string{"unguided", "guided"})
			w := max(vg.Length(len(plotx.SplitRows(r.Unguided)))*0.62*vg.Inch+1.5*vg.Inch, 4*vg.Inch)
			return plotx.Bytes(p, w, vg.Length(2*0.62*stripScale)*vg.Inch+1.2*vg.Inch, format) // sized like mnist's image rows
		}}
	return &report.Report{Name: "density-explore", Tables: []*report.Table{t}, Figures: []*report.Figure{fig}}, nil
}

// stripScale is the height of an image row with a value strip under it,
// in image heights (mnist's image grids: 28-pixel tiles, 2-pixel gaps,
// 11-pixel strips).
const stripScale = 41.0 / 30
