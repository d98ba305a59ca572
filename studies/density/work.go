package density

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// The experiment keeps its work in Env.Work through internal/workstore:
// the network's reference levels and every finished row, saved after
// each, so that a run of hours resumes where an earlier one stopped, or
// reads rows computed on another machine (a GPU). The configuration's and
// the networks' digests must match the run's for a file to be used. One
// run at a time per file (a lock): a second run on the same file is
// refused at once. Shards (Config.Shard) each keep their own file and read
// the others'.

// levelsValue names the network's levels among the stored values.
const levelsValue = "levels network"

// store is the experiment's view of its work: rows and levels, typed.
type store struct {
	*workstore.Store
	// grid says which rows' samples the figures draw (the others keep no
	// grid).
	grid func(model, trace string) bool
}

// releaser is a held lock.
type releaser interface{ Release() error }

// openWork opens the work of cfg on net in dir (nothing kept when it is
// ""), images of dimension dim, and takes its lock (Release it when done).
func openWork(who, dir string, cfg Config, net *access.Net, dim int, log io.Writer) (*store, releaser, error) {
	digest, err := networksDigest(net)
	if err != nil {
		return nil, nil, err
	}
	file := cfg.shard().File(cfg.stem())
	lock, err := workstore.Lock(who, dir, file, filepath.Join(dir, file), log)
	if err != nil {
		return nil, nil, err
	}
	k, err := openStore(who, dir, cfg, digest, net.Backend.Name(), dim)
	if err != nil {
		_ = lock.Release()
		return nil, nil, err
	}
	return k, lock, nil
}

// openStore reads dir's work files for a run of cfg on networks of digest
// (workstore.Open), each row checked as a Row of images of dimension dim.
func openStore(who, dir string, cfg Config, digest, backend string, dim int) (*store, error) {
	s, err := workstore.Open(workstore.Options{Who: who, Dir: dir, Stem: cfg.stem(), Config: cfg, Networks: digest, Shard: cfg.shard(), Backend: backend,
		Row: func(raw json.RawMessage) (string, error) {
			var o densityRowWork
			if err := workstore.DecodeStrict(raw, &o); err != nil {
				return "", err
			}
			w, err := o.row(dim)
			return w.key(), err
		},
		Value: func(_ string, raw json.RawMessage) error {
			var o quantilesWork
			if err := workstore.DecodeStrict(raw, &o); err != nil {
				return err
			}
			_, err := o.quantiles()
			return err
		}})
	if err != nil {
		return nil, err
	}
	grid := func(model, trace string) bool { return model == "mixture" || slices.Contains(cfg.GridTraces, trace) }
	return &store{Store: s, grid: grid}, nil
}

// row returns the kept row of (model, trace, target), if any.
func (k *store) row(model, trace, target string, dim int) (Row, bool, error) {
	var o densityRowWork
	found, err := k.Get(Row{Model: model, Trace: trace, Target: target}.key(), &o)
	if err != nil || !found {
		return Row{}, false, err
	}
	w, err := o.row(dim)
	return w, err == nil, err
}

// keep keeps a finished row.
func (k *store) keep(w Row) error { return k.Put(w.key(), rowToWork(w, k.grid(w.Model, w.Trace))) }

// levels returns the kept levels (nil: none kept).
func (k *store) levels() (*pfode.Quantiles, error) {
	var o quantilesWork
	if found, err := k.Value(levelsValue, &o); err != nil || !found {
		return nil, err
	}
	return o.quantiles()
}

// awaitLevels waits for shard 1's levels.
func (k *store) awaitLevels(ctx context.Context, poll time.Duration, log io.Writer) (*pfode.Quantiles, error) {
	var o quantilesWork
	if err := k.AwaitValue(ctx, levelsValue, &o, poll, log); err != nil {
		return nil, err
	}
	return o.quantiles()
}

func (k *store) keepLevels(q *pfode.Quantiles) error {
	return k.SetValue(levelsValue, quantilesToWork(q))
}

// networksDigest names the ε-, t_θ- and ν_θ-networks a work file's rows
// were made with.
func networksDigest(n *access.Net) (string, error) {
	var parts []string
	for _, scope := range []string{models.ScoreScope, models.TraceScope, models.CentredTraceScope} {
		if !models.HasNetwork(n.Store, scope) {
			continue
		}
		d, err := checkpoint.NetworkDigest(n.Store, scope)
		if err != nil {
			return "", err
		}
		parts = append(parts, scope+":"+d)
	}
	return strings.Join(parts, " "), nil
}

// quantilesWork is a set of levels (pfode.Quantiles) as kept.
type quantilesWork struct {
	Times  []float64   `json:"times"`
	Ps     []float64   `json:"ps"`
	Values [][]float64 `json:"values"`
	How    string      `json:"how"`
}

// densityRowWork is a Row. Every float is a wfloat, so that NaN
// (no level) and an exploding trace's ±Inf survive the round trip.
type densityRowWork struct {
	Model     string      `json:"model"`
	Trace     string      `json:"trace"`
	Target    string      `json:"target"`
	Level     wfloat      `json:"level"`
	LevelNats wfloat      `json:"level_nats"`
	Achieved  [2]wfloat   `json:"achieved"`
	Tracked   [2]wfloat   `json:"tracked"`
	AbsMiss   [2]wfloat   `json:"abs_miss"`
	Ink       wfloat      `json:"ink"`
	Frame     wfloat      `json:"frame"`
	Detail    wfloat      `json:"detail"`
	Limited   wfloat      `json:"limited"`
	SolverErr wfloat      `json:"solver_err"`
	PerSample int64       `json:"per_sample_ns"`
	NFE       int         `json:"nfe"`
	Grid      [][]float64 `json:"grid,omitempty"` // the clipped samples drawn in the figure (rows of the grids only)
}

// wfloat is a float64 whose NaN is null and whose infinities are the
// strings "+Inf" and "-Inf" in JSON.
type wfloat float64

func (f wfloat) MarshalJSON() ([]byte, error) {
	switch v := float64(f); {
	case math.IsNaN(v):
		return []byte("null"), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(float64(f))
}

func (f *wfloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		*f = wfloat(math.NaN())
		return nil
	case `"+Inf"`:
		*f = wfloat(math.Inf(1))
		return nil
	case `"-Inf"`:
		*f = wfloat(math.Inf(-1))
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = wfloat(v)
	return nil
}

func (w Row) key() string { return w.Model + "|" + w.Trace + "|" + w.Target }

func rowToWork(w Row, withGrid bool) densityRowWork {
	est := func(e stats.Estimate) [2]wfloat { return [2]wfloat{wfloat(e.Mean), wfloat(e.SE)} }
	out := densityRowWork{Model: w.Model, Trace: w.Trace, Target: w.Target, Level: wfloat(w.Level), LevelNats: wfloat(w.LevelNats),
		Achieved: est(w.Achieved), Tracked: est(w.Tracked), AbsMiss: est(w.AbsMiss), Ink: wfloat(w.Ink), Frame: wfloat(w.Frame), Detail: wfloat(w.Detail),
		Limited: wfloat(w.Limited), SolverErr: wfloat(w.SolverErr), PerSample: int64(w.PerSample), NFE: w.NFE}
	for _, g := range w.Grid {
		if withGrid {
			out.Grid = append(out.Grid, append([]float64(nil), g.RawRowView(0)...))
		}
	}
	return out
}

func (o densityRowWork) row(dim int) (Row, error) {
	est := func(e [2]wfloat) stats.Estimate { return stats.Estimate{Mean: float64(e[0]), SE: float64(e[1])} }
	w := Row{Model: o.Model, Trace: o.Trace, Target: o.Target, Level: float64(o.Level), LevelNats: float64(o.LevelNats),
		Achieved: est(o.Achieved), Tracked: est(o.Tracked), AbsMiss: est(o.AbsMiss), Ink: float64(o.Ink), Frame: float64(o.Frame), Detail: float64(o.Detail),
		Limited: float64(o.Limited), SolverErr: float64(o.SolverErr), PerSample: time.Duration(o.PerSample), NFE: o.NFE}
	if o.PerSample < 0 || o.NFE < 0 || len(o.Grid) > 64 {
		return Row{}, fmt.Errorf("row %s: %d ns a sample, %d NFE, %d grid images: %w", w.key(), o.PerSample, o.NFE, len(o.Grid), workstore.ErrWork)
	}
	for i, g := range o.Grid {
		if len(g) != dim {
			return Row{}, fmt.Errorf("row %s: grid image %d has %d pixels, want %d: %w", w.key(), i, len(g), dim, workstore.ErrWork)
		}
		w.Grid = append(w.Grid, mat.NewDense(1, dim, append([]float64(nil), g...)))
	}
	return w, nil
}

func quantilesToWork(q *pfode.Quantiles) *quantilesWork {
	return &quantilesWork{Times: q.Times, Ps: q.Ps, Values: q.Values, How: q.How}
}

func (o *quantilesWork) quantiles() (*pfode.Quantiles, error) {
	if len(o.Times) < 2 || len(o.Values) != len(o.Times) || len(o.Ps) < 1 {
		return nil, fmt.Errorf("levels: %d times, levels at %d times, %d quantiles: %w", len(o.Times), len(o.Values), len(o.Ps), workstore.ErrWork)
	}
	for _, v := range o.Values {
		if len(v) != len(o.Ps) {
			return nil, fmt.Errorf("levels: %d values at a time, want one per quantile (%d): %w", len(v), len(o.Ps), workstore.ErrWork)
		}
	}
	return &pfode.Quantiles{Times: o.Times, Ps: o.Ps, Values: o.Values, How: o.How}, nil
}
