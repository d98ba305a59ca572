package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/membudget"
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

func runAnalytic(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx analytic", flag.ContinueOnError)
	a := analyticArgs{}
	fs.StringVar(&a.data, "data", "", "data points Y (N×d), CSV or .npy; - for stdin; required")
	fs.StringVar(&a.points, "points", "", "query points X (B×d), CSV or .npy; - for stdin; required")
	fs.StringVar(&a.weights, "weights", "", "N non-negative weights, one column or one row (optional)")
	fs.StringVar(&a.vec, "vec", "", "vectors v for F·v: B rows, or one row used for all points")
	fs.Float64Var(&a.t, "t", math.NaN(), "time t, required, in the schedule's [t-min, t-max]")
	fs.BoolVar(&a.full, "full", false, "also print the full d×d Fisher matrix of every point (B·d² numbers; --vec gives products instead)")
	fs.BoolVar(&a.header, "header", false, "skip the first line of each CSV file")
	a.sched = scheduleFlags(fs, "")
	a.budget = memoryFlag(fs)
	if code, ok := parseFlags(fs, args, stderr, "analytic", "usage: dfx analytic --data Y.csv --points X.csv --schedule NAME --t T [flags]"); !ok {
		return code
	}
	a.tSet = isSet(fs, "t")
	out, err := analytic(ctx, a)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return failRun(stderr, "analytic", err)
		}
		return fail(stderr, "analytic", err)
	}
	if _, err := stdout.Write(out); err != nil {
		return failRun(stderr, "analytic", err)
	}
	return 0
}

type analyticArgs struct {
	data, points, weights, vec string
	t                          float64
	tSet, full, header         bool
	sched                      func() (schedule.Schedule, error)
	budget                     func() (membudget.Budget, error)
}

func analytic(ctx context.Context, a analyticArgs) ([]byte, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	s, err := a.sched()
	if err != nil {
		return nil, err
	}
	if lo, hi := s.Interval(); a.t < lo || a.t > hi {
		return nil, fmt.Errorf("--t %g is outside the schedule's time domain [%g, %g]", a.t, lo, hi)
	}
	budget, err := a.budget()
	if err != nil {
		return nil, err
	}
	opt := input.Options{Header: a.header, MaxBytes: budget.Bytes}
	y, err := input.ReadFile(a.data, opt)
	if err != nil {
		return nil, err
	}
	x, err := input.ReadFile(a.points, opt)
	if err != nil {
		return nil, err
	}
	w, err := readWeights(a.weights, opt)
	if err != nil {
		return nil, err
	}
	n, d := y.Dims()
	b, _ := x.Dims()
	what := fmt.Sprintf("%d points against %d data points in dimension %d", b, n, d)
	if a.full {
		what += " with --full"
	}
	if err := budget.Check(what, analyticBytes(n, b, d, a.full), "drop --full and use --vec V.csv for Fisher–vector "+
		"products F·v, or pass fewer --points at a time"); err != nil {
		return nil, err
	}
	m, err := mixture.NewDirac(y, w)
	if err != nil {
		return nil, err
	}
	c, err := schedule.At(s, a.t)
	if err != nil {
		return nil, err
	}
	q := mixture.Query{At: c, X: x, Want: mixture.LogProb | mixture.Score | mixture.Denoiser | mixture.Trace}
	if a.full {
		q.Want |= mixture.Full
	}
	if a.vec != "" {
		if q.V, err = input.ReadFile(a.vec, opt); err != nil {
			return nil, err
		}
		q.Want |= mixture.MatVec
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := m.Eval(q)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(map[string]any{"points": analyticPoints(r, b)}); err != nil {
		return nil, fmt.Errorf("encoding result (non-finite value?): %w", err)
	}
	return buf.Bytes(), nil
}

// analyticBytes estimates the peak memory of an analytic query: the data,
// the weights of every point against every component, and per point the
// score, denoiser and — with --full — the d×d Fisher, its copy for the
// output and its JSON text (≈ 24 bytes a number).
func analyticBytes(n, b, d int, full bool) float64 {
	fn, fb, fd := float64(n), float64(b), float64(d)
	bytes := 8*fn*fd + 16*fb*fn + 8*fb*fd*6 + 24*fb*fd*3
	if full {
		bytes += fb * fd * fd * (8 + 8 + 24)
	}
	return bytes
}

// check checks the arguments that need no file: --data, --points and --t
// given, --t finite, at most one input on stdin.
func (a analyticArgs) check() error {
	if a.data == "" || a.points == "" {
		return errors.New("--data and --points are required")
	}
	if !a.tSet {
		return errors.New("--t is required")
	}
	if math.IsNaN(a.t) || math.IsInf(a.t, 0) {
		return fmt.Errorf("--t must be a finite time, got %g", a.t)
	}
	stdin := 0
	for _, p := range []string{a.data, a.points, a.weights, a.vec} {
		if p == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return errors.New("only one of --data, --points, --weights, --vec can read stdin (-)")
	}
	return nil
}

// readWeights reads --weights, one column or one row (nil without the flag).
func readWeights(path string, opt input.Options) ([]float64, error) {
	if path == "" {
		return nil, nil
	}
	wm, err := input.ReadFile(path, opt)
	if err != nil {
		return nil, err
	}
	r, c := wm.Dims()
	w := mat.Col(nil, 0, wm)
	if c != 1 {
		if r != 1 {
			return nil, fmt.Errorf("weights: want one column or one row, got %d×%d", r, c)
		}
		w = mat.Row(nil, 0, wm)
	}
	return w, nil
}

// analyticPoints are the JSON rows of the first b points of r.
func analyticPoints(r *mixture.Result, b int) []analyticPoint {
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
	return pts
}
