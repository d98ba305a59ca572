package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/input"
	"gonum.org/v1/gonum/mat"
)

type analyticPoint struct {
	LogP     float64     `json:"logp"`
	Score    []float64   `json:"score"`
	Denoiser []float64   `json:"denoiser"`
	Trace    float64     `json:"trace"`
	Fisher   [][]float64 `json:"fisher,omitempty"`
	MatVec   []float64   `json:"matvec,omitempty"`
}

// scheduleFlags registers the schedule flags shared by subcommands.
func scheduleFlags(fs *flag.FlagSet) func() (schedule.Schedule, error) {
	name := fs.String("schedule", "", "noise schedule: ve|vp|subvp|edm|linear")
	var p schedule.Params
	fs.Float64Var(&p.SigmaMin, "sigma-min", 0, "VE σ_min (default 0.01)")
	fs.Float64Var(&p.SigmaMax, "sigma-max", 0, "VE σ_max (default 50)")
	fs.Float64Var(&p.BetaMin, "beta-min", 0, "VP/sub-VP β_min (default 0.1)")
	fs.Float64Var(&p.BetaMax, "beta-max", 0, "VP/sub-VP β_max (default 20)")
	fs.Float64Var(&p.TMin, "t-min", 0, "override the schedule's smallest valid t")
	fs.Float64Var(&p.TMax, "t-max", 0, "override the schedule's largest valid t")
	return func() (schedule.Schedule, error) {
		if *name == "" {
			return nil, errors.New("--schedule is required (ve|vp|subvp|edm|linear)")
		}
		for _, v := range []float64{p.SigmaMin, p.SigmaMax, p.BetaMin, p.BetaMax} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("schedule parameter %v must be finite and positive", v)
			}
		}
		return schedule.ByName(*name, p)
	}
}

func runAnalytic(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx analytic", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataPath := fs.String("data", "", "CSV of data points Y (N×d), required")
	pointsPath := fs.String("points", "", "CSV of query points X (B×d), required")
	weightsPath := fs.String("weights", "", "CSV of N non-negative weights (optional)")
	vecPath := fs.String("vec", "", "CSV of vectors v for F·v: B rows, or one row used for all points")
	t := fs.Float64("t", math.NaN(), "time t, required")
	full := fs.Bool("full", false, "also print the full d×d Fisher matrix")
	sched := scheduleFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 0
		}
		return fail(stderr, "analytic", err)
	}
	if fs.NArg() > 0 {
		return fail(stderr, "analytic", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	out, err := analytic(*dataPath, *pointsPath, *weightsPath, *vecPath, *t, *full, sched)
	if err != nil {
		return fail(stderr, "analytic", err)
	}
	if _, err := stdout.Write(out); err != nil {
		return fail(stderr, "analytic", err)
	}
	return 0
}

func analytic(dataPath, pointsPath, weightsPath, vecPath string, t float64, full bool, sched func() (schedule.Schedule, error)) ([]byte, error) {
	if dataPath == "" || pointsPath == "" {
		return nil, errors.New("--data and --points are required")
	}
	if math.IsNaN(t) {
		return nil, errors.New("--t is required")
	}
	s, err := sched()
	if err != nil {
		return nil, err
	}
	y, err := input.ReadFile(dataPath, input.Options{})
	if err != nil {
		return nil, err
	}
	x, err := input.ReadFile(pointsPath, input.Options{})
	if err != nil {
		return nil, err
	}
	var w []float64
	if weightsPath != "" {
		wm, err := input.ReadFile(weightsPath, input.Options{})
		if err != nil {
			return nil, err
		}
		r, c := wm.Dims()
		w = mat.Col(nil, 0, wm)
		if c != 1 {
			if r != 1 {
				return nil, fmt.Errorf("weights: want one column or one row, got %d×%d", r, c)
			}
			w = mat.Row(nil, 0, wm)
		}
	}
	m, err := mixture.NewDirac(y, w)
	if err != nil {
		return nil, err
	}
	c, err := schedule.At(s, t)
	if err != nil {
		return nil, err
	}
	q := mixture.Query{At: c, X: x, Want: mixture.LogProb | mixture.Score | mixture.Denoiser | mixture.Trace}
	if full {
		q.Want |= mixture.Full
	}
	if vecPath != "" {
		if q.V, err = input.ReadFile(vecPath, input.Options{}); err != nil {
			return nil, err
		}
		q.Want |= mixture.MatVec
	}
	r, err := m.Eval(q)
	if err != nil {
		return nil, err
	}
	b, _ := x.Dims()
	pts := make([]analyticPoint, b)
	for i := range pts {
		p := &pts[i]
		p.LogP, p.Trace = r.LogProb[i], r.Trace[i]
		p.Score = mat.Row(nil, i, r.Score)
		p.Denoiser = mat.Row(nil, i, r.Denoiser)
		if r.MatVec != nil {
			p.MatVec = mat.Row(nil, i, r.MatVec)
		}
		if r.Fisher != nil {
			d := r.Fisher[i].SymmetricDim()
			p.Fisher = make([][]float64, d)
			for j := range p.Fisher {
				p.Fisher[j] = mat.Row(nil, j, r.Fisher[i])
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(map[string]any{"points": pts}); err != nil {
		return nil, fmt.Errorf("encoding result (non-finite value?): %w", err)
	}
	return buf.Bytes(), nil
}
