package likelihood

import (
	"fmt"

	"github.com/dfx-lab/dfx/dfx/report"
)

func (r *Result) bpdTable(where string) *report.Table {
	b := r.BPD
	c := r.Config
	q := r.Image.Quantization()
	title := sectionTitle("Bits per dimension on the "+c.Data+" test set", where,
		fmt.Sprintf("Uniformly dequantised test images, bpd = −log₂ p/d + %g (data in [−1, 1]), "+
			"PF-ODE to T = 1 from s = %g (the data likelihood) or from the paper protocol's t₁ = %.3g "+
			"(the image taken as x_{t₁}, the step nearest t = 0 left out).", q.Offset(), b.Start, b.PaperT1))
	if c.Anchor != "" {
		title += fmt.Sprintf(" %s reports %.2f bpd on %s.", c.Anchor, c.AnchorBPD, c.Data)
	}
	t := &report.Table{Name: "bpd", Title: title,
		Caption: "bits per dimension of the dequantised test set: trace methods side by side from s and from t₁, the data bpd, " +
			"DF-TM's solver convergence, the whole test set with DF-TM",
		Columns: []report.Column{{Name: "method"}, {Name: "solver and start", Key: "solver"}, {Name: "images"}, {Name: "mean bpd", Key: "bpd", Format: "%.4g"},
			{Name: "± SE", Key: "bpd_se", Format: "%.3g"}, {Name: "NFE", Key: "nfe"}, report.Millis("time per image", "seconds_per_image"),
			{Name: "rel. NLL error vs exact VJP (mean / max)", NoCSV: true}, {Name: "rel_nll_err", NoMarkdown: true}, {Name: "max_rel_nll_err", NoMarkdown: true},
			{Name: "mean |Δbpd| vs exact VJP", Key: "abs_bpd_err", Format: "%.3g"}},
		Align: "llrrrrrlr"}
	add := func(m BPDMethod, compared bool) {
		e, rel, mx, a := report.None(), report.None(), report.None(), report.None()
		switch {
		case compared && m.Method == "vjp-exact":
			e = report.Text("reference")
		case compared:
			e, rel, mx, a = report.Text(pct(m.RelNLLErr)+" / "+pct(m.MaxRelNLLErr)), report.Float(m.RelNLLErr), report.Float(m.MaxRelNLLErr), report.Float(m.AbsBPDErr)
		}
		t.Add(report.Text(m.Method), report.Text(m.Solver), report.Int(m.Images), report.Float(m.MeanBPD), report.Float(m.SEBPD), report.Int(m.NFE),
			report.Float(m.SecsPerImage), e, rel, mx, a)
	}
	for _, m := range append(append([]BPDMethod(nil), b.DataCompare...), b.PaperCompare...) {
		add(m, true)
	}
	d := b.DataBPD
	d.Method = "hutchinson-16 (data bpd)"
	add(d, false)
	w := b.Whole
	w.Method = "df-tm (test set)"
	add(w, false)
	if c.Anchor != "" {
		t.Add(report.Text(c.Anchor+" (published)"), report.Text("dopri5 from ≈ 0"), report.Int(r.TestImages), report.Float(c.AnchorBPD),
			report.None(), report.None(), report.None(), report.None(), report.None(), report.None(), report.None())
	}
	conv := &report.Table{Title: "### DF-TM's convergence in the solver (from t₁, comparison images)", Align: "lrrrr",
		Columns: []report.Column{{Name: "solver"}, {Name: "NFE", Key: "nfe"}, {Name: "mean bpd", Key: "bpd", Format: "%.4f"},
			{Name: "mean |bpd − bpd(dopri5)|", Key: "abs_bpd_err_vs_dopri5", Format: "%.3g"}, report.Millis("time per image", "seconds_per_image")}}
	for _, c := range b.Conv {
		conv.Add(report.Text(c.Solver), report.Int(c.NFE), report.Float(c.MeanBPD), report.Float(c.DiffToRef), report.Float(c.SecsPerImage))
	}
	t.More = append(t.More, conv)
	t.Notes = append(t.Notes,
		"The relative NLL error is |NLL − NLL_vjp|/|NLL_vjp| in nats; the absolute bpd difference is given beside it.",
		"Side-by-side rows integrate one Euler trajectory per start (the trace does not change x), so their differences are the traces' alone.")
	return t
}

func (r *Result) guidanceTable(where string) *report.Table {
	g := r.Guidance
	setup := fmt.Sprintf("DDIM (%d steps), classifier-free guidance ε̃ = ε_∅ + s (ε_c − ε_∅), "+
		"samples balanced over classes with the same initial noise at every scale. "+
		"NLL by DF-TM of the quantised, dequantised samples: the paper's protocol (explicit Euler, 10 steps on [t_min, 1], "+
		"the step nearest t = 0 left out, i.e. from t₁ = %.3g) and the same start with a finer solver (Heun, %d steps; "+
		"its distance from dopri5 is in bpd.md's convergence section). Both are −log q_{t₁} of the image taken as x_{t₁}.",
		r.Config.DDIMSteps, g.Rows[0].PaperT0, r.Config.BPDSteps)
	t := section("guidance", "Figure 1b analogue: NLL against classifier log-probability over guidance scales", where, setup,
		"Figure 1b data: per guidance scale, classifier log-probability and accuracy, DF-TM NLL under both protocols, times")
	t.Columns = []report.Column{{Name: "scale s"}, {Name: "samples"}, {Name: "log p(c|x)", Format: "%.3g"}, {Name: "± SE", Format: "%.3g"},
		report.Percent("accuracy", ""),
		{Name: "bpd (paper protocol)", Format: "%.4f"}, {Name: "± SE", Format: "%.3g"},
		{Name: "bpd (Heun from t₁)", Format: "%.4f"}, {Name: "± SE", Format: "%.3g"},
		{Name: "sampling time", Unit: "s", Format: "%.1f s"}, {Name: "NLL time", Unit: "s", Format: "%.1f s"}}
	t.Align = "rrrrrrrrrrr"
	for _, row := range g.Rows {
		f := report.Float
		t.Add(f(row.Scale), report.Int(row.Samples), f(row.LogProb), f(row.LogProbSE), f(row.Accuracy),
			f(row.PaperBPD), f(row.PaperSE), f(row.ConvBPD), f(row.ConvSE), f(row.SampleSecs), f(row.NLLSecs))
	}
	var lp, pb, cb []float64
	for _, row := range g.Rows {
		lp, pb, cb = append(lp, row.LogProb), append(pb, row.PaperBPD), append(cb, row.ConvBPD)
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Across scales, Spearman ρ(mean log p(c|x), mean bpd) = %.2f (paper protocol) and %.2f (Heun from t₁).",
		Spearman(lp, pb), Spearman(lp, cb)))
	return t
}

func (r *Result) fig2Table(where string) *report.Table {
	f := r.Fig2
	setup := fmt.Sprintf("%d seeds per class at guidance scale %g; NLL by DF-TM (Heun from t₁, as in guidance.md); "+
		"confidence = classifier log p(c|x); distance = Euclidean distance to the nearest of the %s training images "+
		"(data scaled to [−1, 1]).", f.Seeds, f.Scale, thousands(r.TrainImages))
	t := section("fig2", "Figure 2 analogue: samples ranked by NLL", where, setup,
		"Figure 2 data: Spearman correlations of NLL with classifier confidence and with the distance to the nearest training image")
	t.Columns = []report.Column{{Name: "correlation of NLL with"}, {Name: "Spearman ρ (pooled)", Format: "%.3f"},
		{Name: "mean of per-class ρ", Format: "%.3f"}}
	t.Align = "lrr"
	t.Add(report.Text("classifier confidence log p(c|x)"), report.Float(f.RhoConf), report.Float(f.RhoConfWithin))
	t.Add(report.Text("distance to the nearest training image"), report.Float(f.RhoNN), report.Float(f.RhoNNWithin))
	per := &report.Table{Title: "### Per class: bpd range (lowest, highest)", Align: "rrrrr", Columns: []report.Column{{Name: "class"},
		{Name: "lowest bpd", Format: "%.3f"}, {Name: "highest bpd", Format: "%.3f"}, {Name: "confidence of lowest", Format: "%.3g"},
		{Name: "confidence of highest", Format: "%.3g"}}}
	for c := range f.BPD {
		k := len(f.BPD[c])
		if k == 0 {
			continue
		}
		per.Add(report.Int(c), report.Float(f.BPD[c][0]), report.Float(f.BPD[c][k-1]), report.Float(f.Conf[c][0]), report.Float(f.Conf[c][k-1]))
	}
	t.More = append(t.More, per)
	return t
}

func (r *Result) trajTable(where string) *report.Table {
	tr := r.Traj
	setup := fmt.Sprintf("%d unconditional samples generated by the PF-ODE (Heun, %d steps, t from %g to %g) "+
		"while integrating the log-density ODE with DF-TM; then each sample re-encoded from data to noise with the same solver.",
		tr.Samples, tr.Steps, tr.TrajStart, tr.TrajEnd)
	t := section("trajectory", "Beyond the paper: NLL along the generation trajectory", where, setup,
		"each sample's NLL accumulated during generation (DF-TM) against re-encoding it; cost of the log-density on top of the sampler")
	t.Columns = []report.Column{{Name: "quantity"}, {Name: "value", NoCSV: true}, {Name: "value", Key: "value", NoMarkdown: true},
		{Name: "unit", NoMarkdown: true}}
	t.Align = "lr"
	for _, q := range []struct {
		name, shown string
		v           float64
		unit        string
	}{
		{"mean bpd along the trajectory", fmt.Sprintf("%.4f", tr.TrajBPD), tr.TrajBPD, "bpd"},
		{"mean bpd by re-encoding", fmt.Sprintf("%.4f", tr.ReBPD), tr.ReBPD, "bpd"},
		{"mean |difference| (bpd)", f3(tr.MeanAbsDiff), tr.MeanAbsDiff, "bpd"},
		{"max |difference| (bpd)", f3(tr.MaxAbsDiff), tr.MaxAbsDiff, "bpd"},
		{"re-encoded x_T: mean ‖x_T' − x_T‖/‖x_T‖", f3(tr.XTRelErr), tr.XTRelErr, ""},
		{"time per sample: sampler alone", ms(tr.SamplerOnlySecs), tr.SamplerOnlySecs, "s"},
		{"time per sample: sampler + log-density (DF-TM)", ms(tr.TrajSecs), tr.TrajSecs, "s"},
		{"time per sample: re-encoding (DF-TM)", ms(tr.ReSecs), tr.ReSecs, "s"},
	} {
		t.Add(report.Text(q.name), report.Text(q.shown), report.Float(q.v), report.Text(q.unit))
	}
	t.Notes = append(t.Notes, "bpd here is −log₂ q_{t₁}(x)/d + log₂(levels/2) of the continuous state at t₁ (not quantised).")
	return t
}
