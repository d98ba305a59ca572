package model

import (
	"context"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/gomlx/compute"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// AblationVariant is one ε-network of the ablation: the chosen candidate's
// hyperparameters (mnist.Candidates()[0]) with Over applied, with or without its
// mixture skip.
type AblationVariant struct {
	Name   string
	Over   map[string]any
	NoSkip bool
}

// AblationConfig says what RunAblation trains and how it validates.
type AblationConfig struct {
	Profile  report.Profile
	Steps    int                // training steps of every variant
	ValEvery int                // steps between validations
	Fit      mixture.FitOptions // the skip mixture (and every variant's yardstick)
	Images   int                // held-out images of the ELBO validation
	Levels   int                // its log-SNR levels
	Variants []AblationVariant
	// Small replaces the trunk's width by 32 (quick profile).
	Small bool
}

// AblationVariants are the variants of the full profile: the chosen
// design, and one change each — t sampling, dequantisation, trunk, skip.
func AblationVariants() []AblationVariant {
	film := map[string]any{"/score/" + models.ParamArch: models.ArchFiLM, "/score/" + models.ParamWidth: 512}
	return []AblationVariant{
		{Name: "patch + skip (chosen)"},
		{Name: "t uniform", Over: map[string]any{models.ParamTimeSampling: "uniform"}},
		{Name: "8-bit data (no dequantisation)", Over: map[string]any{models.ParamDequantize: 0.0}},
		{Name: "FiLM MLP 512×2 trunk", Over: film},
		{Name: "no skip", NoSkip: true},
	}
}

// AblationFull and AblationQuick are the two profiles.
func AblationFull() AblationConfig {
	return AblationConfig{Profile: report.Full, Steps: 800, ValEvery: 200, Fit: *mnist.SkipOptions(), Images: mnist.ValELBOImages, Levels: mnist.ValELBOLevels,
		Variants: AblationVariants()}
}

func AblationQuick() AblationConfig {
	return AblationConfig{Profile: report.Quick, Steps: 4, ValEvery: 2, Images: 16, Levels: 4, Small: true,
		Fit:      mixture.FitOptions{Components: 1, PerClass: true, Rank: 8, Shrink: 0.2, Idle: 1e-4, Seed: 1},
		Variants: []AblationVariant{{Name: "patch + skip (chosen)"}, {Name: "no skip", NoSkip: true}}}
}

// ablationEMA is the EMA decay of the ablation's short runs (the long
// runs' 0.999 averages over about as many steps as an ablation takes, and
// would hide what it measures).
const ablationEMA = 0.99

// AblationPoint is one validation of one variant.
type AblationPoint struct {
	Step         int
	Seconds      float64 // training time so far
	Gain, GainSE float64 // ELBO gain over the skip mixture (bpd), paired SE
	Term         float64 // the network's ELBO diffusion term (bpd)
}

// AblationRow is one variant's run.
type AblationRow struct {
	Variant AblationVariant
	Params  int64 // trainable parameters
	Curve   []AblationPoint
}

// AblationResult is the ablation at equal training steps.
type AblationResult struct {
	Config  AblationConfig
	SkipBPD float64 // the skip mixture's exact bpd on 1 000 test images
	Rows    []AblationRow
	Machine string
	Seconds float64
}

// RunAblation fits the skip mixture once, then trains each variant from
// the same seed for the same number of steps, validating each by its ELBO
// gain over that mixture on the same held-out draws (ValidationELBO's
// protocol; a variant without skip is compared with the same mixture).
func RunAblation(ctx context.Context, cfg AblationConfig, log io.Writer) (*AblationResult, error) {
	start := time.Now()
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	g, err := mnist.FitMixtureContext(ctx, cfg.Fit)
	if err != nil {
		return nil, err
	}
	res := &AblationResult{Config: cfg, Machine: mnist.Machine()}
	if res.SkipBPD, _, err = mnist.MixtureBPD(g, 1000); err != nil {
		return nil, err
	}
	base := mnist.Candidates()[0]
	for _, v := range cfg.Variants {
		row, err := ablate(ctx, backend, base, v, g, cfg, log)
		if err != nil {
			return nil, fmt.Errorf("mnist: ablation %q: %w", v.Name, err)
		}
		res.Rows = append(res.Rows, *row)
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func ablate(ctx context.Context, backend compute.Backend, base mnist.NetSpec, v AblationVariant, g *mixture.Gaussian, cfg AblationConfig,
	log io.Writer) (*AblationRow, error) {
	params := maps.Clone(base.Params)
	for k, x := range v.Over {
		params[k] = x
	}
	params[models.ParamCosineSteps] = cfg.Steps
	params[models.ParamEMADecay] = ablationEMA
	if cfg.Small {
		params["/score/"+models.ParamWidth] = 32
		params["/score/"+models.ParamEmbedWidth] = 32
	}
	store := models.NewStore()
	store.SetParams(params)
	if !v.NoSkip {
		if err := models.SetMixtureSkip(store, g); err != nil {
			return nil, err
		}
	}
	deq, _ := params[models.ParamDequantize].(float64)
	rows, labels, err := mnist.TrainingData(deq > 0)
	if err != nil {
		return nil, err
	}
	tr, err := models.NewTrainer(backend, store, mnist.Schedule(), models.DSM, rows, labels)
	if err != nil {
		return nil, err
	}
	row := &AblationRow{Variant: v}
	validate := func(s models.LoopState) error {
		e, err := mnist.ELBOAgainst(backend, store, g, cfg.Images, cfg.Levels)
		if err != nil {
			return err
		}
		train := s.Train.Seconds()
		row.Curve = append(row.Curve, AblationPoint{Step: int(s.Step), Seconds: train, Gain: e.Gain, GainSE: e.GainSE, Term: e.Term})
		fmt.Fprintf(log, "mnist: ablation %s: step %d (%.0f s): ELBO gain over the skip mixture %+.4f ± %.4f bpd\n", v.Name, s.Step, train, e.Gain, e.GainSE)
		return nil
	}
	if _, err := tr.Run(ctx, models.Loop{To: int64(cfg.Steps), Hooks: []models.Hook{{Every: int64(cfg.ValEvery), AtEnd: true, Run: validate}}}); err != nil {
		return nil, err
	}
	for x := range store.IterVariables() {
		if x.Trainable && models.HasScope(x.Scope(), models.ScoreScope) {
			row.Params += int64(x.Shape().Size())
		}
	}
	return row, nil
}

// Report implements report.Result.
func (r *AblationResult) Report() (*report.Report, error) {
	c := r.Config
	t := &report.Table{Name: "ablation",
		Title: fmt.Sprintf("## Ablation of the MNIST ε-network at equal training steps\n\nMeasured on %s, %s profile, in %.0f s. "+
			"Every variant trains %d steps from the same seed (batch 128, EMA decay %g); the skip mixture: %d Gaussians per digit of rank %d "+
			"(exact test bpd %.4f on 1 000 dequantised test images). Gain over it on the last %d test images, %d log-SNR levels, ± paired SE. "+
			"The protocol and its reading: NOTES.md.",
			r.Machine, c.Profile, r.Seconds, c.Steps, ablationEMA, c.Fit.Components, c.Fit.Rank, r.SkipBPD, c.Images, c.Levels),
		Caption: "ablation: ELBO gain over the skip mixture after equal training steps",
		Columns: []report.Column{{Name: "variant"}, {Name: "trainable parameters"}, {Name: "s / step", Format: "%.2f"},
			{Name: "gain at half the steps", Format: "%+.4f"}, {Name: "gain at the end", Format: "%+.4f"}, {Name: "± SE", Format: "%.4f"}}, Align: "lrrrrr"}
	for _, row := range r.Rows {
		last := row.Curve[len(row.Curve)-1]
		half := report.None()
		for _, p := range row.Curve {
			if 2*p.Step >= c.Steps {
				half = report.Float(p.Gain)
				break
			}
		}
		t.Add(report.Text(row.Variant.Name), report.Int(int(row.Params)), report.Float(last.Seconds/float64(last.Step)), half,
			report.Float(last.Gain), report.Float(last.GainSE))
	}
	t.Notes = append(t.Notes, "The chosen design: "+mnist.Candidates()[0].About+". Each other row changes one thing.")
	rep := &report.Report{Name: "mnist-ablation", Title: "MNIST ε-network ablation", Tables: []*report.Table{t},
		Figures: []*report.Figure{{Name: "ablation.png", Caption: "ELBO gain over the skip mixture along training, per variant", Render: r.figure}}}
	return rep, nil
}

func (r *AblationResult) figure(format string) ([]byte, error) {
	var series []plotx.Series
	var off []string
	for _, row := range r.Rows {
		last := row.Curve[len(row.Curve)-1]
		if last.Gain < ablationFloor { // off the scale that shows the close variants
			off = append(off, fmt.Sprintf("off scale: %s, %+.2f", row.Variant.Name, last.Gain))
			continue
		}
		s := plotx.Series{Name: row.Variant.Name, Bars: true, Points: true}
		for _, p := range row.Curve {
			s.X, s.Y = append(s.X, float64(p.Step)), append(s.Y, p.Gain)
			s.Lo, s.Hi = append(s.Lo, p.Gain-p.GainSE), append(s.Hi, p.Gain+p.GainSE)
		}
		series = append(series, s)
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("mnist: every ablation variant ends below %g bpd", ablationFloor)
	}
	series = plotx.Distinct(series)
	series = append(series, plotx.Series{Note: true, Name: fmt.Sprintf("bars: ± 1 SE, paired, %d images", r.Config.Images)})
	for _, o := range off {
		series = append(series, plotx.Series{Note: true, Name: o})
	}
	p, err := plotx.Lines("ε-network ablation: gain over the mixture", "training step", "ELBO gain over the skip mixture (bits/dim)", series...)
	if err != nil {
		return nil, err
	}
	return plotx.Bytes(p, 8*vg.Inch, 4.5*vg.Inch, format)
}

// ablationFloor is the final gain below which a variant is left out of the
// figure (and named in its legend), so that the close ones stay legible.
const ablationFloor = -0.1
