package adjoint

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
)

// GoalDFEAStepMarginal is the goal for DF-EA's marginal cost over the
// inner solve: ≤ 5 % of one forward.
const GoalDFEAStepMarginal = 0.05

const adjointCommand = "dfx reproduce adjoint"

// Report implements report.Result.
func (r *GuidanceResult) Report() (*report.Report, error) {
	rep := &report.Report{Name: "adjoint", Title: "Adjoint-guided sampling on " + r.Problem + ": paper Figures 3–4, DF-EA vs VJP, and the exact-operator study"}
	prof := "full profile"
	if r.Config.Profile == report.Quick {
		prof = "quick profile (toy sizes; not the committed numbers)"
	}
	c := r.Config
	where := fmt.Sprintf("Measured on %s, GoMLX backend %q, %s; the %s part of `%s` in %.0f s. ",
		r.Machine, r.Backend, prof, r.Problem, adjointCommand, r.Elapsed.Seconds()) +
		fmt.Sprintf("Sampler: DDIM, %d steps, guidance on steps [%d − n, %d), %d inner DDIM steps for x̂₀ with the discrete adjoint through them, ",
			c.Steps, c.WindowEnd, c.WindowEnd, c.InnerSteps) +
		"normalised gradient, unconditional ε-network."
	rep.Tables = append(rep.Tables, r.gridTable(where), r.curveTable(where), r.costTable(where))
	if r.Exact != nil {
		rep.Tables = append(rep.Tables, r.exactGradTable(where), r.exactHSTable(where), r.exactRunTable(where))
	}
	add := func(name, caption string, render func(string) ([]byte, error)) {
		rep.Figures = append(rep.Figures, &report.Figure{Name: name, Caption: caption, Render: render})
	}
	add("fig3_reward_vs_steps.png", "Figure 3 analogue: reward (mean ± 1 SE over seeds) against the number of guided steps, "+
		"VJP and DF-EA at the VJP-chosen strength, one panel per reward", r.stepsFigure)
	add("fig3_reward_vs_time.png", "Figure 3 analogue: reward against wall-clock seconds per sample, VJP and DF-EA", r.timeFigure)
	add("fig4_samples.png", "Figure 4 analogue: the same seeds unguided, VJP-guided and DF-EA-guided (largest window), reward under each image", r.samplesFigure)
	if r.Exact != nil {
		add("exact_gradients.png", fmt.Sprintf("exact-operator study on the %d-atom Dirac mixture: ", r.Exact.Atoms)+
			"cosine and relative error of each approximate adjoint gradient against the exact one along the window", r.exactGradFigure)
		add("exact_hs.png", "‖F − F_op‖_HS at the guided states against the corrected bound of Prop. error_bound_ea, and ‖F‖_HS for scale", r.exactHSFigure)
	}
	return rep, rep.Check()
}

// meanSE is a column of means ± standard errors ("%.4g ± %.2g").
func seColumn(name, key string) report.Column {
	return report.Column{Name: name, Key: key, Format: "%.4g", SEFormat: "%.2g"}
}

// guidanceCols are the first columns of the grid and curve tables.
var guidanceCols = []report.Column{{Name: "reward"}, {Name: "operator"}}

func (r *GuidanceResult) gridTable(where string) *report.Table {
	t := &report.Table{Name: "strength_grid", Title: "## Guidance strength grid search (paper: VJP over 0.1…0.5, best 0.2, reused for DF-EA)",
		Caption: "strength grid search per reward and operator: mean reward ± SE, classifier confidence, the best strength (VJP's drives both curves)",
		Columns: append(guidanceCols[:2:2], report.Column{Name: "strength", Format: "%v"}, seColumn("reward (mean ± SE)", "mean_reward"),
			report.Column{Name: "unguided", Key: "unguided_mean_reward", Format: "%.3g"},
			report.Column{Name: "classifier confidence", Key: "classifier_confidence", Format: "%.3f"},
			report.Column{Name: "s per run", Key: "seconds_per_run", Unit: "s", Format: "%.1f"}, report.Column{Name: "best"}),
		Align: "llrrrrrc"}
	for _, g := range r.Grid {
		ch := ""
		if g.Chosen {
			ch = "✓"
		}
		t.Add(report.Text(g.Reward), report.Text(g.Operator), report.Float(g.Strength), report.FloatSE(g.Mean, g.SE), report.Float(g.UnguidedMean),
			report.Float(g.ClassifierConf), report.Float(g.SecondsPerRun), report.Text(ch))
	}
	t.Notes = append(t.Notes, where, fmt.Sprintf("%d seeds per point, %d guided steps (the largest window). ", r.Config.GridSeeds, r.Config.maxGuided())+
		"Strength s moves x by s·σ(t)·√d per guided step (normalised gradient). Best: the highest mean reward per reward and operator; "+
		"VJP's best is the strength of both operators' curves (the paper's protocol), DF-EA's own best adds a third curve where it differs. "+
		"Classifier confidence: the mean max-class probability of the samples.")
	for _, name := range r.Config.Rewards {
		t.Notes = append(t.Notes, fmt.Sprintf("%s: %s.", name, r.rw.About(name)))
	}
	return t
}

func (r *GuidanceResult) curveTable(where string) *report.Table {
	t := &report.Table{Name: "fig3_rewards", Title: "## Figure 3 analogue: reward against guided steps, VJP vs DF-EA",
		Caption: "reward (mean ± SE) per reward, operator and number of guided steps, with seconds per sample and ε̂ evaluations",
		Columns: append(guidanceCols[:2:2], report.Column{Name: "guided steps", Key: "guided_steps"}, report.Column{Name: "strength", Format: "%v"},
			seColumn("reward (mean ± SE)", "mean_reward"), report.Column{Name: "s per sample", Key: "seconds_per_sample", Unit: "s", Format: "%.3f"},
			report.Column{Name: "ε̂ evals per run", Key: "eps_evals_per_run"}, report.Column{Name: "Fisher products per run", Key: "fisher_products_per_run"}),
		Align: "llrrrrrr"}
	for _, run := range r.Runs {
		t.Add(report.Text(run.Reward), report.Text(run.Operator), report.Int(run.Guided), report.Float(run.Strength), report.FloatSE(run.Mean, run.SE),
			report.Float(run.PerSample), report.Int(run.ModelEvals), report.Int(run.OperatorCalls))
	}
	t.Notes = append(t.Notes, where, fmt.Sprintf("%d seeds per point (the same initial noise for every row); rewards of the clipped final images.",
		r.Config.Seeds))
	return t
}

func (r *GuidanceResult) costTable(where string) *report.Table {
	col := func(name, key string) report.Column {
		return report.Column{Name: name, Key: key, Unit: "s", Format: "%.3g ms", Scale: 1e3}
	}
	t := &report.Table{Name: "cost", Title: "## Cost per guided step",
		Caption: "time and memory of one guided step per Fisher operator and batch size: forward, inner solve, loss, adjoint pass, DF-EA's marginal cost",
		Columns: []report.Column{{Name: "batch"}, {Name: "operator"}, col("forward", "forward"), col("inner solve", "inner_solve"), col("loss + grad", "loss_grad"),
			col("adjoint pass", "adjoint_pass"), col("guided step", "guided_step"), col("per Fisher product", "per_fisher_product"),
			{Name: "product ÷ forward", Key: "product_over_forward", Format: "%.2f%%", Scale: 100},
			{Name: "allocated per step", Key: "allocated_per_step", Unit: "MB", Format: "%.1f MB"},
			{Name: "trajectory cache", Key: "trajectory_cache", Unit: "MB", Format: "%.2f MB"}},
		Align: "rlrrrrrrrrr"}
	for _, c := range r.Cost {
		t.Add(report.Int(c.Batch), report.Text(c.Operator), report.Float(c.Forward), report.Float(c.Inner), report.Float(c.Loss), report.Float(c.Adjoint),
			report.Float(c.Step), report.Float(c.PerProduct), report.Float(c.Marginal), report.Float(c.AllocMB), report.Float(c.CacheMB))
	}
	t.Notes = append(t.Notes, where,
		fmt.Sprintf("Medians of %d interleaved rounds after a warm-up round. ", r.Config.CostRounds)+
			fmt.Sprintf("\"product ÷ forward\" is one Fisher product's cost over one ε-network forward of the same batch; the goal for DF-EA is ≤ %.0f %%. ",
				100*GoalDFEAStepMarginal)+
			"The guided step is one Gradient call (inner solve + loss + adjoint), timed separately from its parts. "+
			"Memory: the Go heap allocated by one guided step (GoMLX's Go backend allocates its buffers on it) "+
			"and the inner trajectory the adjoint caches (O(inner steps × B × d), no graphs kept).")
	return t
}

// studyCols are the first columns of the exact study's per-step tables.
var studyCols = []report.Column{{Name: "step"}, {Name: "t", Format: "%.3f"}, {Name: "method"}}

func (r *GuidanceResult) exactGradTable(where string) *report.Table {
	e := r.Exact
	t := &report.Table{Name: "exact_gradients", Title: "## Exact-operator study: adjoint gradients against the exact one (" + r.Problem + " Dirac mixture)",
		Caption: fmt.Sprintf("cosine and relative error of each approximate λ_t against the exact adjoint gradient of the %d-atom Dirac mixture, along the window",
			e.Atoms),
		Columns: append(studyCols[:3:3], seColumn("cosine (mean ± SE)", "cos"), seColumn("relative error (mean ± SE)", "rel_err")), Align: "rrlrr"}
	for _, g := range e.Grad {
		t.Add(report.Int(g.Step), report.Float(g.T), report.Text(g.Method), report.FloatSE(g.Cos, g.CosSE), report.FloatSE(g.RelErr, g.RelErrSE))
	}
	t.Notes = append(t.Notes, where, fmt.Sprintf("States: the exact guided sampler's (Dirac mixture of %d training images, exact ε and exact F v, ", e.Atoms)+
		fmt.Sprintf("reward %s, strength %g, %d seeds, %d guided steps). ", e.Config.Reward, e.Strength, e.Config.Seeds, e.Config.Guided)+
		"At each state every λ_t = ∂L(x̂₀(x_t))/∂x_t is computed from that state: vjp and df-ea (network ȳ) with the ε-network's own inner solve, "+
		"df-ea (exact ȳ) with the exact inner solve, so its error is the endpoint approximation alone.")
	return t
}

func (r *GuidanceResult) exactHSTable(where string) *report.Table {
	e := r.Exact
	t := &report.Table{Name: "exact_hs", Title: "## Exact-operator study: ‖F − F_op‖_HS against the corrected bound of Prop. error_bound_ea",
		Caption: "Hilbert–Schmidt error of each Fisher operator at the guided states, the corrected DF-EA bound and the fraction of states within it",
		Columns: append(studyCols[:3:3], report.Column{Name: "‖F − F_op‖_HS (mean ± SE over seeds)", Key: "hs_err", Format: "%.3g", SEFormat: "%.2g"},
			report.Column{Name: "‖F‖_HS", Key: "fisher_hs", Format: "%.3g"}, report.Column{Name: "bound", Format: "%.3g"},
			report.Column{Name: "within bound", Key: "within_bound", Format: "%.2f%%", Scale: 100},
			report.Column{Name: "δ = ‖ȳ_op − ȳ‖", Key: "delta", Format: "%.3g"}),
		Align: "rrlrrrrr"}
	for _, h := range e.HS {
		b, w, d := report.None(), report.None(), report.None()
		if !math.IsNaN(h.Bound) {
			b, w, d = report.Float(h.Bound), report.Float(h.Within), report.Float(h.Delta)
		}
		t.Add(report.Int(h.Step), report.Float(h.T), report.Text(h.Method), report.FloatSE(h.HS, h.HSSE), report.Float(h.FisherHS), b, w, d)
	}
	t.Notes = append(t.Notes, where, "F is the exact d×d Fisher of the Dirac mixture (mixture.Full), "+
		"F_EA = I/σ² − (α²/σ⁴)(x̂₀x̂₀ᵀ − ȳȳᵀ) "+
		fmt.Sprintf("with each variant's own x̂₀ and ȳ, and the VJP operator's matrix is its products with the %d unit vectors. ", r.Dim)+
		fmt.Sprintf("Bound: (α²/σ⁴)(2D² + δ(‖ȳ‖ + ‖ȳ_op‖)), D = max(max_i ‖y_i‖, ‖x̂₀‖) = %.3g or more. VJP has no bound.", e.D))
	return t
}

func (r *GuidanceResult) exactRunTable(where string) *report.Table {
	e := r.Exact
	t := &report.Table{Name: "exact_rewards", Title: "## Exact-operator study: the guided samplers run to the end",
		Caption: "reward, time and distance to the nearest training image of each sampler of the exact-operator study",
		Columns: []report.Column{{Name: "sampler"}, seColumn("reward (mean ± SE)", "mean_reward"),
			{Name: "s per sample", Key: "seconds_per_sample", Unit: "s", Format: "%.2f"},
			{Name: "distance to the nearest training image", Key: "nearest_training_distance", Format: "%.3g"}},
		Align: "lrrr"}
	for _, run := range e.Runs {
		t.Add(report.Text(run.Method), report.FloatSE(run.Mean, run.SE), report.Float(run.PerSample), report.Float(run.NearestDist))
	}
	t.Notes = append(t.Notes, where, fmt.Sprintf("Reward %s; %d seeds; the exact samplers run the Dirac mixture's exact ε, the others the ε-network.",
		e.Config.Reward, e.Config.Seeds))
	return t
}

// stepsFigure: per reward, reward against guided steps for VJP and DF-EA.
func (r *GuidanceResult) stepsFigure(format string) ([]byte, error) {
	return r.curveFigure(format, false)
}

func (r *GuidanceResult) timeFigure(format string) ([]byte, error) {
	return r.curveFigure(format, true)
}

func (r *GuidanceResult) curveFigure(format string, byTime bool) ([]byte, error) {
	var ps []*plot.Plot
	for _, reward := range r.Config.Rewards {
		var series []plotx.Series
		type curve struct {
			op, name string
			s        float64
		}
		curves := []curve{{OperatorVJP, "VJP", r.Strength[reward]}, {OperatorDFEA, "DF-EA", r.Strength[reward]}}
		if own, ok := r.OwnStrength[reward]; ok && own != r.Strength[reward] {
			curves = append(curves, curve{OperatorDFEA, fmt.Sprintf("DF-EA at its own best, %g", own), own})
		}
		for _, c := range curves {
			s := plotx.Series{Name: c.name, Points: true, Bars: true}
			for _, n := range r.Config.Guided {
				run := r.RunAt(reward, c.op, n, c.s)
				if run == nil {
					continue
				}
				x := float64(n)
				if byTime {
					x = run.PerSample
				}
				s.X, s.Y = append(s.X, x), append(s.Y, run.Mean)
				s.Lo, s.Hi = append(s.Lo, run.Mean-run.SE), append(s.Hi, run.Mean+run.SE)
			}
			series = append(series, s)
		}
		series = append(series, plotx.Series{Name: fmt.Sprintf("VJP's best strength %g; bars ± 1 SE", r.Strength[reward]), Note: true})
		xl := "guided steps (ending at step " + fmt.Sprint(r.Config.WindowEnd) + " of " + fmt.Sprint(r.Config.Steps) + ")"
		if byTime {
			xl = "wall-clock seconds per sample"
		}
		p, err := plotx.Lines(reward+" reward", xl, "reward (higher is better)", series...)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	// one column: the legend sits right of each panel, and the time axis
	// needs the width for its tick labels
	return plotx.TilesBytes(ps, 1, 8*vg.Inch, 3.2*vg.Inch, format)
}

// samplesFigure: per reward, rows unguided / VJP / DF-EA at the largest
// window, the first Fig4Seeds seeds, reward under each image.
func (r *GuidanceResult) samplesFigure(format string) ([]byte, error) {
	n := r.Config.maxGuided()
	k := r.Config.Fig4Seeds
	var ps []*plot.Plot
	var h vg.Length
	for _, reward := range r.Config.Rewards {
		runs := []*GuidedRun{r.Run(reward, "none", 0), r.Run(reward, OperatorVJP, n), r.Run(reward, OperatorDFEA, n)}
		var rows [][]*mat.Dense
		var vals [][]float64
		var labels []string
		for _, run := range runs {
			if run == nil {
				return nil, fmt.Errorf("adjoint: figure 4: missing run for %s", reward)
			}
			var imgs []*mat.Dense
			for i := range k {
				imgs = append(imgs, mat.NewDense(1, r.Dim, clipTo(run.Images, r.Image).RawRowView(i)))
			}
			rows, vals = append(rows, imgs), append(vals, run.Rewards[:k])
			name := map[string]string{"none": "unguided", OperatorVJP: "VJP", OperatorDFEA: "DF-EA"}[run.Operator]
			labels = append(labels, fmt.Sprintf("%s %.2fs", name, run.PerSample))
		}
		p, ph, err := r.rw.SampleGrid(fmt.Sprintf("%s reward, %d guided steps (reward under each image)", reward, n), "seed", "sampler, seconds per sample",
			rows, vals, labels)
		if err != nil {
			return nil, err
		}
		ps, h = append(ps, p), ph
	}
	w := max(vg.Length(k)*0.62*vg.Inch+2.2*vg.Inch, 6*vg.Inch)
	return plotx.TilesBytes(ps, 1, w, h, format)
}

func (r *GuidanceResult) exactGradFigure(format string) ([]byte, error) {
	e := r.Exact
	methods := []string{StudyVJP, StudyEANet, StudyEAExact}
	var cos, rel []plotx.Series
	for _, m := range methods {
		c, rl := plotx.Series{Name: m, Points: true}, plotx.Series{Name: m, Points: true}
		for _, g := range e.Grad {
			if g.Method == m {
				c.X, c.Y, c.Lo, c.Hi = append(c.X, g.T), append(c.Y, g.Cos), append(c.Lo, g.Cos-g.CosSE), append(c.Hi, g.Cos+g.CosSE)
				rl.X, rl.Y, rl.Lo, rl.Hi = append(rl.X, g.T), append(rl.Y, g.RelErr), append(rl.Lo, g.RelErr-g.RelErrSE), append(rl.Hi, g.RelErr+g.RelErrSE)
			}
		}
		cos, rel = append(cos, c), append(rel, rl)
	}
	band := plotx.Series{Name: "bands: mean ± 1 SE over seeds", Note: true}
	cut := plotx.Series{Name: "(cut where mean − SE ≤ 0)", Note: true}
	p1, err := plotx.Lines("cosine to the exact adjoint gradient", "t (guidance runs from right to left)", "cosine (mean over seeds)", append(cos, band)...)
	if err != nil {
		return nil, err
	}
	p2, err := plotx.LogLines("relative error of the adjoint gradient", "t (guidance runs from right to left)", "‖λ − λ*‖ / ‖λ*‖ (mean, log scale)",
		false, true, append(rel, band, cut)...)
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes([]*plot.Plot{p1, p2}, 2, 5.5*vg.Inch, 4*vg.Inch, format)
}

func (r *GuidanceResult) exactHSFigure(format string) ([]byte, error) {
	e := r.Exact
	var series []plotx.Series
	var fisher plotx.Series
	for _, m := range []string{StudyVJP, StudyEANet, StudyEAExact} {
		var ts, hs, lo, hi, bs []float64
		fisher = plotx.Series{Name: "‖F‖_HS (exact)"}
		for _, h := range e.HS {
			if h.Method != m {
				continue
			}
			ts, hs, bs = append(ts, h.T), append(hs, h.HS), append(bs, h.Bound)
			lo, hi = append(lo, h.HS-h.HSSE), append(hi, h.HS+h.HSSE)
			fisher.X, fisher.Y = append(fisher.X, h.T), append(fisher.Y, h.FisherHS)
		}
		series = append(series, plotx.Series{Name: m, X: ts, Y: hs, Lo: lo, Hi: hi, Points: true})
		if m != StudyVJP {
			series = append(series, plotx.Series{Name: "bound, " + m, X: ts, Y: bs})
		}
	}
	series = append(series, fisher, plotx.Series{Name: "VJP: no bound in the paper", Note: true},
		plotx.Series{Name: "bands: mean ± 1 SE over seeds", Note: true})
	p, err := plotx.LogLines("Hilbert–Schmidt error of the Fisher operator", "t", "‖F − F_op‖_HS (mean over seeds, log scale)", false, true, series...)
	if err != nil {
		return nil, err
	}
	return plotx.Bytes(p, 7*vg.Inch, 4.5*vg.Inch, format)
}
