package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"

	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// CandidateRun is one candidate ε-network's training so far, read from its
// weights checkpoint (finished) or its resumable state (in progress).
type CandidateRun struct {
	Spec     mnist.NetSpec
	Finished bool
	Steps    int64 // steps taken
	Record   mnist.TrainRecord
	Params   int64 // trainable parameters
}

// CandidatesResult compares the candidate ε-networks found in a folder.
type CandidatesResult struct {
	Dir      string
	Runs     []CandidateRun
	Protocol string
}

// ReadCandidates reads every candidate's record from dir
// (<name>.dfxckpt, else _<name>.state.dfxckpt); candidates never trained
// there are left out.
func ReadCandidates(dir string) (*CandidatesResult, error) {
	res := &CandidatesResult{Dir: dir, Protocol: mnist.ValidationProtocol()}
	for _, spec := range mnist.Candidates() {
		if spec.Scope != models.ScoreScope { // the candidates' t_θ, ν_θ: not compared here
			continue
		}
		run := CandidateRun{Spec: spec}
		c, err := checkpoint.Read(mnist.WeightsPath(dir, spec.Name))
		if err == nil {
			run.Finished = true
		} else if errors.Is(err, fs.ErrNotExist) {
			if c, err = checkpoint.Read(mnist.StatePath(dir, spec.Name)); errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(c.Header.Config))
		if err := dec.Decode(&run.Record); err != nil {
			return nil, fmt.Errorf("mnist: %s: training record: %v: %w", spec.Name, err, checkpoint.ErrInvalid)
		}
		if run.Spec, err = asTrained(spec, c); err != nil {
			return nil, fmt.Errorf("mnist: %s: %w", spec.Name, err)
		}
		run.Steps = c.Header.Step
		if run.Finished {
			run.Steps = int64(run.Record.Steps)
		}
		run.Params = c.ParamCount()
		res.Runs = append(res.Runs, run)
	}
	if len(res.Runs) == 0 {
		return nil, fmt.Errorf("mnist: no candidate ε-network (checkpoint or state) in %s: train one with `dfx train <candidate> -out %s`", dir, dir)
	}
	return res, nil
}

// asTrained is spec with the trunk's and the skip's sizes that checkpoint c
// records: a candidate trained at other sizes than the registry's (a
// notebook's tiny one, a run from before a change) is described as it was
// trained.
func asTrained(spec mnist.NetSpec, c *checkpoint.Checkpoint) (mnist.NetSpec, error) {
	stored, err := c.NewStoreFromParams()
	if err != nil {
		return spec, err
	}
	spec.Params = maps.Clone(spec.Params)
	net := stored.RootScope().At(models.ScoreScope) // its parameters, or the root's it inherits
	for _, p := range []string{models.ParamArch, models.ParamWidth, models.ParamDepth} {
		if v, ok := net.GetParam(p); ok {
			spec.Params["/score/"+p] = v
		}
	}
	if spec.Skip != nil {
		skip := *spec.Skip
		root := stored.RootScope()
		if r, ok := intParam(root, models.ParamMixtureRank); ok {
			skip.Rank = r
		}
		if k, ok := intParam(root, models.ParamMixtureComponents); ok {
			if classes, _ := intParam(root, models.ParamNumClasses); skip.PerClass && classes > 0 {
				k /= classes // the stored count is over all classes
			}
			skip.Components = k
		}
		spec.Skip = &skip
	}
	return spec, nil
}

// intParam is the int parameter key of scope (or of a scope above it).
func intParam(scope *model.Scope, key string) (int, bool) {
	v, ok := scope.GetParam(key)
	i, isInt := v.(int)
	return i, ok && isInt
}

// Report implements report.Result.
func (r *CandidatesResult) Report() (*report.Report, error) {
	t := &report.Table{Name: "candidates",
		Title: fmt.Sprintf("## Candidate ε-networks: what training adds to the skip, against training time\n\nRead from %s. "+
			"ELBO gain: %s; positive means the network's likelihood bound is tighter than its skip mixture's on the same draws, "+
			"± the standard error of the paired differences. Validation bpd: %s, at the first and last step "+
			"(solver and estimator error included; not the test bpd of the results).", r.Dir, mnist.ELBOProtocol(), r.Protocol),
		Caption: "candidate ε-networks: skip, architecture, data, t-sampling, and their validation along training",
		Columns: []report.Column{{Name: "candidate"}, {Name: "skip"}, {Name: "trunk"}, {Name: "data"}, {Name: "t sampling", Key: "t_sampling"},
			{Name: "parameters", Format: "%.3g"}, {Name: "steps"}, {Name: "training time", Key: "training_time", Unit: "s", Format: "%.2f h", Scale: 1.0 / 3600},
			{Name: "ELBO gain over the skip, bpd (last)", NoCSV: true}, {Name: "validation bpd (first)", NoCSV: true}, {Name: "validation bpd (last)", NoCSV: true},
			{Name: "state"},
			{Name: "elbo_gain", NoMarkdown: true}, {Name: "elbo_step", NoMarkdown: true},
			{Name: "val_bpd_first", NoMarkdown: true}, {Name: "val_step_first", NoMarkdown: true},
			{Name: "val_bpd_last", NoMarkdown: true}, {Name: "val_step_last", NoMarkdown: true}},
		Align: "lllllrrrrrrl"}
	for _, run := range r.Runs {
		p := run.Spec.Params
		skip := "none"
		if run.Spec.Skip != nil {
			skip = fmt.Sprintf("mixture %d/class, rank %d", run.Spec.Skip.Components, run.Spec.Skip.Rank)
		}
		trunk := fmt.Sprintf("%v %v×%v", orDefault(p["/score/"+models.ParamArch], models.ArchMLP),
			orDefault(p["/score/"+models.ParamWidth], p[models.ParamWidth]), orDefault(p["/score/"+models.ParamDepth], p[models.ParamDepth]))
		data := "8-bit"
		if mnist.Dequantizes(run.Spec) {
			data = "dequantised"
		}
		// gain, first and last: the shown text, the value ± SE and the step.
		type point struct{ shown, value, step report.Cell }
		none := point{report.None(), report.None(), report.None()}
		gain, first, last := none, none, none
		for _, v := range run.Record.Val {
			if v.ELBO != nil {
				gain = point{report.Text(fmt.Sprintf("%+.4f ± %.4f (step %d)", v.ELBO.Gain, v.ELBO.GainSE, v.Step)),
					report.FloatSE(v.ELBO.Gain, v.ELBO.GainSE), report.Int(int(v.Step))}
			}
			if v.SE > 0 {
				pt := point{report.Text(fmt.Sprintf("%.4f ± %.3f (step %d)", v.BPD, v.SE, v.Step)), report.FloatSE(v.BPD, v.SE), report.Int(int(v.Step))}
				if first == none {
					first = pt
				} else {
					last = pt
				}
			}
		}
		state := "training"
		if run.Finished {
			state = "finished"
		}
		t.Add(report.Text(run.Spec.Name), report.Text(skip), report.Text(trunk), report.Text(data),
			report.Text(fmt.Sprint(orDefault(p[models.ParamTimeSampling], "uniform"))),
			report.Float(float64(run.Params)), report.Int(int(run.Steps)), report.Float(run.Record.Seconds), gain.shown, first.shown, last.shown, report.Text(state),
			gain.value, gain.step, first.value, first.step, last.value, last.step)
	}
	t.Notes = append(t.Notes, "Training time is wall-clock on the machine of each record (see `dfx ckpt`); "+
		"runs that shared the machine with other work are slower per step, so compare at equal steps as well.")
	rep := &report.Report{Name: "mnist-candidates", Title: "Candidate MNIST ε-networks", Tables: []*report.Table{t}}
	for _, run := range r.Runs {
		if len(run.Record.Val) > 0 {
			rep.Figures = append(rep.Figures, &report.Figure{Name: "candidates.png",
				Caption: "ELBO gain of each candidate ε-network over its skip mixture against training steps",
				Render:  r.figure})
			break
		}
	}
	return rep, nil
}

func orDefault(v, d any) any {
	if v == nil {
		return d
	}
	return v
}

func (r *CandidatesResult) figure(format string) ([]byte, error) {
	var series []plotx.Series
	for _, run := range r.Runs {
		s := plotx.Series{Name: run.Spec.Name, Bars: true}
		for _, v := range run.Record.Val {
			if v.ELBO == nil {
				continue
			}
			s.X, s.Y = append(s.X, float64(v.Step)), append(s.Y, v.ELBO.Gain)
			s.Lo, s.Hi = append(s.Lo, v.ELBO.Gain-v.ELBO.GainSE), append(s.Hi, v.ELBO.Gain+v.ELBO.GainSE)
		}
		if len(s.X) > 0 {
			series = append(series, s)
		}
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("mnist: no candidate has an ELBO validation point yet")
	}
	series = append(plotx.Distinct(series),
		plotx.Series{Note: true, Name: fmt.Sprintf("bars: ± 1 SE, paired, %d held-out images", mnist.ValELBOImages)})
	p, err := plotx.Lines("candidate ε-networks: ELBO gain over the skip mixture along training", "training step",
		"gain over the skip (bits/dim, higher is better)", series...)
	if err != nil {
		return nil, err
	}
	return plotx.Bytes(p, 7*vg.Inch, 4.5*vg.Inch, format)
}
