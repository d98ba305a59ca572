package adjoint

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
)

// seCell is a mean ± standard error over seeds.
func seCell(s MeanSE) report.Cell { return report.FloatSE(s.Mean, s.SE) }

// gmmHSMethods are the approximate operators whose HS error is reported.
var gmmHSMethods = []string{GMMVJP, GMMEANet, GMMEAExact}

// Report implements report.Result: the Markdown tables (adjoint-gmm.md),
// full-precision CSVs (adjoint-gmm-steps.csv, one row per step and
// method; adjoint-gmm-rewards.csv, the rewards section) and three figures.
func (r *GMMResult) Report() (*report.Report, error) {
	c := r.Config
	stepCols := []report.Column{{Name: "step"}, {Name: "t", Format: "%.3f"}, {Name: "σ", Key: "sigma", Format: "%.3f"}}
	md := &report.Table{Name: "adjoint-gmm", NoCSV: true,
		Title: fmt.Sprintf("# Adjoint guidance with exact and approximate Fisher operators on a Gaussian mixture (d = %d, K = %d, %s)\n\n",
			c.Dim, c.Components, r.Schedule) +
			fmt.Sprintf("Data: %d anisotropic Gaussian components (means N(0, 0.36 I), covariance rank 3 with variances 0.5, 0.3, 0.15 plus 0.05 I), ",
				c.Components) +
			fmt.Sprintf("uniform weights, seed %d. ", c.Seed) +
			fmt.Sprintf("Loss L(x₀) = ½‖x₀ − target‖², target midway between components %d and %d (%.3g apart); reward −L. ",
				r.Between[0], r.Between[1], r.TargetDist) +
			fmt.Sprintf("Guidance: %d outer DDIM steps, guided on steps [%d, %d), %d inner DDIM steps, strength %g (normalised: %v), %d seeds. ",
				c.OuterSteps, c.From, c.To, c.InnerSteps, c.Strength, c.Normalize, c.Seeds) +
			fmt.Sprintf("ε-network: residual MLP %d × %d, v-prediction (ε = αv + σx) trained by DSM with v weighting ", c.Width, c.Depth) +
			fmt.Sprintf("for %d steps on %d draws (final loss %.4g, %.0f s).\n\n", c.TrainSteps, c.TrainSamples, r.TrainLoss, r.TrainTime.Seconds()) +
			"## Gradient agreement along the exact guided path\n\n" +
			"At the state of each guided outer step of the exact sampler (all seeds), λ = ∂L(x̂₀(x_t))/∂x_t is computed by each method " +
			"and compared with a separate exact computation λ*: cosine and ‖λ − λ*‖/‖λ*‖, mean ± standard error over seeds.",
		Caption: fmt.Sprintf("adjoint guidance on a d = %d Gaussian mixture: gradient agreement, operator HS error and rewards of exact, VJP and DF-EA operators",
			c.Dim),
		Columns: append(stepCols[:3:3], report.Column{Name: "‖λ*‖", Format: "%.3g"}, report.Column{Name: "net ε rel. err", Format: "%.3g"})}
	for _, m := range GMMMethods {
		md.Columns = append(md.Columns, report.Column{Name: m + " cos", Format: "%.3f"})
		if m != GMMExact {
			md.Columns = append(md.Columns, report.Column{Name: m + " rel. err", Format: "%.3g"})
		}
	}
	hs := &report.Table{Title: "## Operator error at the same states\n\n" +
		"‖F − F_op‖_HS per state against the exact Fisher F = −∇²log q_t (mixture.Gaussian, full matrix), mean ± SE over seeds. " +
		"DF-EA's matrix is F_EA = I/σ² − (α²/σ⁴)(x̂₀x̂₀ᵀ − ȳȳᵀ) with x̂₀ the inner solve's endpoint and ȳ the denoiser at the state, " +
		"of the network or of the exact mixture; " +
		fmt.Sprintf("the VJP's matrix is built from d VJP products with the basis vectors, at the first %d seeds only (its cost).", gmmVJPSeeds),
		Columns: append(stepCols[:3:3], report.Column{Name: "‖F‖_HS", Format: "%.4g"})}
	for _, m := range gmmHSMethods {
		hs.Columns = append(hs.Columns, report.Column{Name: m + " ‖F − F_op‖_HS", Format: "%.3g"})
	}
	steps := &report.Table{Name: "adjoint-gmm-steps", NoMarkdown: true,
		Caption: "per guided step and method: cosine, relative error and HS error against the exact ones (full precision)",
		Columns: append(stepCols[:3:3], report.Column{Name: "method"}, report.Column{Name: "cos"}, report.Column{Name: "rel_err"}, report.Column{Name: "hs_err"},
			report.Column{Name: "fisher_hs"}, report.Column{Name: "net_eps_rel_err"}, report.Column{Name: "grad_norm_exact"})}
	for _, s := range r.Steps {
		at := []report.Cell{report.Int(s.Step), report.Float(s.T), report.Float(s.Sigma)}
		row := append(at[:3:3], report.Float(s.GradNormExact.Mean), report.Float(s.NetEpsRelErr.Mean))
		for _, m := range GMMMethods {
			row = append(row, seCell(s.Cos[m]))
			if m != GMMExact {
				row = append(row, seCell(s.RelErr[m]))
			}
		}
		md.Add(row...)
		hrow := append(at[:3:3], report.Float(s.FisherHS.Mean))
		for _, m := range gmmHSMethods {
			hrow = append(hrow, seCell(s.HS[m]))
		}
		hs.Add(hrow...)
		for _, m := range GMMMethods {
			h, ok := s.HS[m]
			if !ok {
				h = MeanSE{}
				if m != GMMExact {
					continue
				}
			}
			steps.Add(append(at[:3:3], report.Text(m), seCell(s.Cos[m]), seCell(s.RelErr[m]), seCell(h),
				report.Float(s.FisherHS.Mean), report.Float(s.NetEpsRelErr.Mean), report.Float(s.GradNormExact.Mean))...)
		}
	}
	hs.Notes = []string{"No bound is given: Prop. error_bound_ea is proved for Dirac mixtures."}
	md.More = []*report.Table{hs, r.rewardsTable()}
	return &report.Report{Name: "adjoint-gmm", Title: fmt.Sprintf("Adjoint guidance operators on a d = %d Gaussian mixture", c.Dim),
		Tables: []*report.Table{md, steps},
		Figures: []*report.Figure{
			{Name: "adjoint-gmm-agreement.png", Render: r.agreementFigure,
				Caption: "cosine and relative error of each method's adjoint gradient against the exact one versus t"},
			{Name: "adjoint-gmm-hs.png", Render: r.hsFigure,
				Caption: "Hilbert–Schmidt error of each approximate Fisher operator versus t, with the exact Fisher's norm"},
			{Name: "adjoint-gmm-rewards.png", Render: r.rewardFigure, Caption: "mean reward ± standard error of each sampler"},
		}}, nil
}

// series is one curve per method of a per-step quantity, with a band of
// ± 1 standard error over seeds.
func (r *GMMResult) series(methods []string, get func(GMMStep, string) (MeanSE, bool)) []plotx.Series {
	var out []plotx.Series
	for _, m := range methods {
		s := plotx.Series{Name: m, Points: true}
		for _, st := range r.Steps {
			if v, ok := get(st, m); ok {
				s.X, s.Y = append(s.X, st.T), append(s.Y, v.Mean)
				s.Lo, s.Hi = append(s.Lo, v.Mean-v.SE), append(s.Hi, v.Mean+v.SE)
			}
		}
		if len(s.X) > 0 {
			out = append(out, s)
		}
	}
	return out
}

func (r *GMMResult) agreementFigure(format string) ([]byte, error) {
	approx := GMMMethods[1:]
	cos := r.series(approx, func(s GMMStep, m string) (MeanSE, bool) { v, ok := s.Cos[m]; return v, ok })
	rel := r.series(approx, func(s GMMStep, m string) (MeanSE, bool) { v, ok := s.RelErr[m]; return v, ok })
	note := plotx.Series{Name: "exact: cosine 1, error 0 (not drawn)", Note: true}
	band := plotx.Series{Name: fmt.Sprintf("bands: mean ± 1 SE over %d seeds", r.Config.Seeds), Note: true}
	p1, err := plotx.Lines(fmt.Sprintf("adjoint gradient cosine to exact (d = %d)", r.Config.Dim), "t", "mean cosine to exact λ", append(cos, note, band)...)
	if err != nil {
		return nil, err
	}
	p2, err := plotx.LogLines(fmt.Sprintf("adjoint gradient relative error (d = %d)", r.Config.Dim), "t", "mean ‖λ − λ*‖ / ‖λ*‖",
		false, true, append(rel, note, band)...)
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes([]*plot.Plot{p1, p2}, 2, 5.5*vg.Inch, 4*vg.Inch, format)
}

func (r *GMMResult) hsFigure(format string) ([]byte, error) {
	ss := r.series(gmmHSMethods, func(s GMMStep, m string) (MeanSE, bool) { v, ok := s.HS[m]; return v, ok })
	ss = append(ss, r.series([]string{"exact ‖F‖ (scale)"}, func(s GMMStep, _ string) (MeanSE, bool) { return s.FisherHS, true })...)
	ss = append(ss, plotx.Series{Name: fmt.Sprintf("bands: mean ± 1 SE over %d seeds", r.Config.Seeds), Note: true})
	p, err := plotx.LogLines(fmt.Sprintf("Fisher operator error at the guided states (d = %d)", r.Config.Dim), "t", "mean Hilbert–Schmidt norm",
		false, true, ss...)
	if err != nil {
		return nil, err
	}
	return plotx.Bytes(p, 6.5*vg.Inch, 4*vg.Inch, format)
}

func (r *GMMResult) rewardFigure(format string) ([]byte, error) {
	var names []string
	s := plotx.Series{NoLine: true, Bars: true}
	for i, w := range r.Rewards {
		names = append(names, w.Method)
		s.X, s.Y = append(s.X, float64(i)), append(s.Y, w.Reward.Mean)
		s.Lo, s.Hi = append(s.Lo, w.Reward.Mean-w.Reward.SE), append(s.Hi, w.Reward.Mean+w.Reward.SE)
	}
	p, err := plotx.Lines(fmt.Sprintf("reward of each sampler (d = %d, %d seeds; bars: ± 1 standard error)", r.Config.Dim, r.Config.Seeds),
		"sampler", "mean reward −½‖x₀ − target‖²", s)
	if err != nil {
		return nil, err
	}
	plotx.NominalX(p, names...)
	return plotx.Bytes(p, 8*vg.Inch, 4*vg.Inch, format)
}

// rewardsTable is the rewards section of adjoint-gmm.md and its CSV.
func (r *GMMResult) rewardsTable() *report.Table {
	c := r.Config
	rw := &report.Table{Name: "adjoint-gmm-rewards", Caption: "reward, log-density under the mixture and time per sample of each sampler (full precision)",
		Title: fmt.Sprintf("## Rewards\n\nEach sampler run to completion on its own path from the same %d noises; reward −L(x₀) mean ± SE, ", c.Seeds) +
			"the mixture's exact log-density log q(x₀) of the samples (mean ± SE), " +
			"the fraction of samples whose nearest component mean is one of the two the target lies between, " +
			fmt.Sprintf("and the wall time per sample (batch %d).", c.Seeds),
		Columns: []report.Column{{Name: "sampler"}, {Name: "reward", Format: "%.4g"}, {Name: "log q(x₀)", Key: "log_q", Format: "%.4g"},
			{Name: "near the target's components", Key: "near_target", Format: "%.2f"}, {Name: "time / sample", Key: "seconds_per_sample"}}}
	for _, w := range r.Rewards {
		rw.Add(report.Text(w.Method), seCell(w.Reward), seCell(w.LogProb), report.Float(w.NearTarget), report.Duration(w.PerSample))
	}
	rw.Notes = []string{fmt.Sprintf("Run in %.0f s in all (training included).", r.Elapsed.Seconds())}
	return rw
}
