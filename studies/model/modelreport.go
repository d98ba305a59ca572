package model

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
)

// Report implements report.Result.
func (r *ModelEvalResult) Report() (*report.Report, error) {
	if r.Config.Shard != "" {
		return nil, fmt.Errorf("mnist-model: shard %s holds part of the likelihood: run without a shard for the report", r.Config.Shard)
	}
	rep := &report.Report{Name: "mnist-model", Title: "The MNIST ε-network: test likelihood and samples"}
	if len(r.BPD) > 0 {
		rep.Tables = append(rep.Tables, r.likelihoodTable())
	}
	if r.Config.part(PartQuality) && len(r.Quality) > 0 {
		rep.Tables = append(rep.Tables, r.qualityTable())
	}
	for i, s := range r.Quality {
		rep.Figures = append(rep.Figures, r.samplesFigure(i+1, s))
	}
	return rep, nil
}

// samplesFigure is the n-th figure, a grid of the samples s: one row per
// digit.
func (r *ModelEvalResult) samplesFigure(n int, s ModelQuality) *report.Figure {
	title := fmt.Sprintf("%s, guidance scale %g, DDIM %d", r.Config.label(), s.Scale, r.Config.Steps)
	if math.IsNaN(s.Scale) {
		title = "its skip mixture, exact samples"
	}
	return &report.Figure{Name: fmt.Sprintf("samples_%d.png", n),
		Caption: "samples: " + title + " (one row per digit; 8-bit pixels, as measured)",
		Render: func(format string) ([]byte, error) {
			p, err := mnist.ImageGrid("samples: "+title, "sample", "digit (row)", s.Grid, nil)
			if err != nil {
				return nil, err
			}
			return plotx.Bytes(p, vg.Length(len(s.Grid[0]))*0.55*vg.Inch+1.3*vg.Inch, 10*0.55*vg.Inch+1.1*vg.Inch, format)
		}}
}

func (r *ModelEvalResult) likelihoodTable() *report.Table {
	c := r.Config
	m, se := stats.MeanSE(r.BPD)
	diffs := make([]float64, len(r.BPD))
	for i := range diffs {
		diffs[i] = math.Abs(r.BPD[i] - r.Coarse[i])
	}
	solverErr, _ := stats.MeanSE(diffs)
	t := &report.Table{Name: "likelihood",
		Title: fmt.Sprintf("## Test likelihood of the ε-network %s\n\n%s profile; the likelihood computed on %s in %.0f s. "+
			"The first %d test images, dequantised (seed 2); dopri5 at rtol %g (%d model evaluations per batch of %d), trace %s; "+
			"solver error against rtol %g. The protocol and its reading: NOTES.md.",
			r.About, c.Profile, r.LikelihoodMachine, r.LikelihoodSeconds, c.Images, c.RTol, r.NFE, min(c.batch(), c.Images), r.Trace, 10*c.RTol),
		Caption: "test bpd of the ε-network and of its skip mixture on the same images",
		Columns: []report.Column{{Name: "model"}, {Name: "test bpd", Format: "%.4f"}, {Name: "± SE", Format: "%.4f"},
			{Name: "solver error (mean |Δ|)", Format: "%.4f"}}, Align: "lrrr"}
	t.Add(report.Text("ε-network "+c.label()), report.Float(m), report.Float(se), report.Float(solverErr))
	if r.Mixture != nil {
		mm, ms := stats.MeanSE(r.Mixture)
		t.Add(report.Text(r.MixtureAbout+" (exact)"), report.Float(mm), report.Float(ms), report.Text("0 (closed form)"))
		for i := range diffs {
			diffs[i] = r.Mixture[i] - r.BPD[i]
		}
		dm, ds := stats.MeanSE(diffs)
		// a signed difference in a column of bpd: its sign is shown, its value stays a number in CSV
		t.Add(report.Text("mixture − network (paired; positive: the network is better)"), report.Text(fmt.Sprintf("%+.4f", dm)),
			report.Float(ds), report.None())
	}
	return t
}

func (r *ModelEvalResult) qualityTable() *report.Table {
	c := r.Config
	q := &report.Table{Name: "samples",
		Title: fmt.Sprintf("## Samples of the ε-network\n\nMeasured on %s. %d per digit, DDIM with %d steps (seed %d), classifier-free guidance scale s; "+
			"the skip mixture's exact samples beside them; all rounded to 8-bit pixels. The measures: NOTES.md.", r.Machine, c.PerClass, c.Steps, c.Seed),
		Caption: "sample quality of the ε-network and of its skip mixture",
		Columns: []report.Column{{Name: "samples"}, {Name: "s"},
			{Name: "classifier agreement", Format: "%.1f%%", Scale: 100}, {Name: "k-NN agreement", Format: "%.1f%%", Scale: 100},
			{Name: "frame rms", Format: "%.3f"}, {Name: "Fréchet distance", Format: "%.1f"}, {Name: "median nearest distance", Format: "%.2f"},
			{Name: "near-copies", Format: "%.2f%%", Scale: 100}}, Align: "lrrrrrrr"}
	for _, s := range r.Quality {
		sc := report.None()
		if !math.IsNaN(s.Scale) {
			sc = report.Float(s.Scale)
		}
		q.Add(report.Text(s.Source), sc, report.Float(s.Q.ClassifierAgree), report.Float(s.Q.KNNAgree),
			report.Float(s.Q.FrameRMS), report.Float(s.Q.FD), report.Float(s.Q.NearestMedian), report.Float(s.Q.Copies))
	}
	return q
}
