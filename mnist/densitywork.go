package mnist

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// The MNIST density experiment keeps its work in DensityExpConfig.Work
// (density.json): the network's reference levels and every finished row,
// saved after each, so that a run of hours resumes where an earlier one
// stopped, or reads rows computed on another machine (a GPU). The settings
// and the networks' digests must match the run's for the file to be used.

const densityWorkFile = "density.json"

// densityWork is Work/density.json.
type densityWork struct {
	Settings string                    `json:"settings"` // the configuration (Dir and Work left out), as JSON
	Digest   string                    `json:"digest"`   // the ε-, t_θ- and ν_θ-networks' digests
	Levels   map[string]*quantilesWork `json:"levels"`   // "network": the reference levels
	Rows     []densityRowWork          `json:"rows"`
	Machine  string                    `json:"machine"`
	Backend  string                    `json:"backend"`
	Seconds  float64                   `json:"seconds"`
}

type quantilesWork struct {
	Times  []float64   `json:"times"`
	Ps     []float64   `json:"ps"`
	Values [][]float64 `json:"values"`
	How    string      `json:"how"`
}

// densityRowWork is a DensityExpRow; NaN (no level) is null.
type densityRowWork struct {
	Model     string      `json:"model"`
	Trace     string      `json:"trace"`
	Target    string      `json:"target"`
	Level     *float64    `json:"level"`
	LevelNats *float64    `json:"level_nats"`
	Achieved  [2]*float64 `json:"achieved"`
	Tracked   [2]*float64 `json:"tracked"`
	AbsMiss   [2]*float64 `json:"abs_miss"`
	Ink       float64     `json:"ink"`
	Frame     float64     `json:"frame"`
	Detail    float64     `json:"detail"`
	Limited   float64     `json:"limited"`
	SolverErr float64     `json:"solver_err"`
	PerSample float64     `json:"per_sample_s"`
	NFE       int         `json:"nfe"`
	Grid      [][]float64 `json:"grid"` // the clipped samples drawn in the figure
}

func nullable(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func unnull(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func (w DensityExpRow) key() string { return w.Model + "|" + w.Trace + "|" + w.Target }

func rowToWork(w DensityExpRow) densityRowWork {
	est := func(e stats.Estimate) [2]*float64 { return [2]*float64{nullable(e.Mean), nullable(e.SE)} }
	out := densityRowWork{Model: w.Model, Trace: w.Trace, Target: w.Target, Level: nullable(w.Level), LevelNats: nullable(w.LevelNats),
		Achieved: est(w.Achieved), Tracked: est(w.Tracked), AbsMiss: est(w.AbsMiss), Ink: w.Ink, Frame: w.Frame, Detail: w.Detail,
		Limited: w.Limited, SolverErr: w.SolverErr, PerSample: w.PerSample.Seconds(), NFE: w.NFE}
	for _, g := range w.Grid {
		out.Grid = append(out.Grid, append([]float64(nil), g.RawRowView(0)...))
	}
	return out
}

func (o densityRowWork) row() (DensityExpRow, error) {
	est := func(e [2]*float64) stats.Estimate { return stats.Estimate{Mean: unnull(e[0]), SE: unnull(e[1])} }
	w := DensityExpRow{Model: o.Model, Trace: o.Trace, Target: o.Target, Level: unnull(o.Level), LevelNats: unnull(o.LevelNats),
		Achieved: est(o.Achieved), Tracked: est(o.Tracked), AbsMiss: est(o.AbsMiss), Ink: o.Ink, Frame: o.Frame, Detail: o.Detail,
		Limited: o.Limited, SolverErr: o.SolverErr, PerSample: time.Duration(o.PerSample * float64(time.Second)), NFE: o.NFE}
	if math.IsNaN(w.Achieved.Mean) || math.IsInf(w.Achieved.Mean, 0) || o.PerSample < 0 || o.NFE < 0 || len(o.Grid) > 64 {
		return DensityExpRow{}, fmt.Errorf("row %s: achieved %v bpd, %g s, %d NFE, %d grid images: %w", w.key(), w.Achieved.Mean, o.PerSample, o.NFE, len(o.Grid), ErrWork)
	}
	for i, g := range o.Grid {
		if len(g) != Dim {
			return DensityExpRow{}, fmt.Errorf("row %s: grid image %d has %d pixels, want %d: %w", w.key(), i, len(g), Dim, ErrWork)
		}
		w.Grid = append(w.Grid, mat.NewDense(1, Dim, append([]float64(nil), g...)))
	}
	return w, nil
}

func quantilesToWork(q *pfode.Quantiles) *quantilesWork {
	return &quantilesWork{Times: q.Times, Ps: q.Ps, Values: q.Values, How: q.How}
}

func (o *quantilesWork) quantiles() (*pfode.Quantiles, error) {
	if len(o.Times) < 2 || len(o.Values) != len(o.Times) || len(o.Ps) < 1 {
		return nil, fmt.Errorf("levels: %d times, levels at %d times, %d quantiles: %w", len(o.Times), len(o.Values), len(o.Ps), ErrWork)
	}
	for _, v := range o.Values {
		if len(v) != len(o.Ps) {
			return nil, fmt.Errorf("levels: %d values at a time, want one per quantile (%d): %w", len(v), len(o.Ps), ErrWork)
		}
	}
	return &pfode.Quantiles{Times: o.Times, Ps: o.Ps, Values: o.Values, How: o.How}, nil
}

// densitySettings is the configuration a work file is made for: cfg
// without the folders (the networks are named by their digests).
func densitySettings(cfg DensityExpConfig) (string, error) {
	cfg.Dir, cfg.Work = "", ""
	raw, err := json.Marshal(cfg)
	return string(raw), err
}

// networksDigest names the ε-, t_θ- and ν_θ-networks a work file's rows
// were made with.
func networksDigest(n *Networks) (string, error) {
	var parts []string
	for _, scope := range []string{models.ScoreScope, models.TraceScope, models.CentredTraceScope} {
		if !models.HasNetwork(n.Store, scope) {
			continue
		}
		d, err := models.NetworkDigest(n.Store, scope)
		if err != nil {
			return "", err
		}
		parts = append(parts, scope+":"+d)
	}
	return strings.Join(parts, " "), nil
}

// densityKeeper keeps the work of one run: the rows found, and the file
// rewritten after every new row.
type densityKeeper struct {
	dir   string
	work  densityWork
	rows  map[string]DensityExpRow
	start time.Time
	base  float64 // seconds of earlier runs
}

// openDensityWork reads dir's density.json for a run of cfg on networks of
// digest (a fresh keeper when there is none or dir is ""); a file made with
// other settings or networks, or malformed, is an error, never silently
// replaced.
func openDensityWork(dir string, cfg DensityExpConfig, digest, backend string) (*densityKeeper, error) {
	settings, err := densitySettings(cfg)
	if err != nil {
		return nil, err
	}
	k := &densityKeeper{dir: dir, rows: map[string]DensityExpRow{}, start: time.Now(),
		work: densityWork{Settings: settings, Digest: digest, Levels: map[string]*quantilesWork{}, Machine: Machine(), Backend: backend}}
	if dir == "" {
		return k, nil
	}
	path := filepath.Join(dir, densityWorkFile)
	var got densityWork
	found, err := readStrict(path, &got)
	if err != nil || !found {
		return k, err
	}
	if got.Settings != settings || got.Digest != digest {
		return nil, fmt.Errorf("mnist-density: %s was made with other settings or networks (digests %s; this run: %s) (remove it, or use another work folder): %w", path, got.Digest, digest, ErrWork)
	}
	for name, q := range got.Levels {
		if _, err := q.quantiles(); err != nil {
			return nil, fmt.Errorf("mnist-density: %s: %s %w", path, name, err)
		}
	}
	for _, o := range got.Rows {
		w, err := o.row()
		if err != nil {
			return nil, fmt.Errorf("mnist-density: %s: %w", path, err)
		}
		if _, dup := k.rows[w.key()]; dup {
			return nil, fmt.Errorf("mnist-density: %s: row %s twice: %w", path, w.key(), ErrWork)
		}
		k.rows[w.key()] = w
	}
	if got.Levels == nil {
		got.Levels = map[string]*quantilesWork{}
	}
	addTo := func(list *string, v string) {
		if !slices.Contains(strings.Split(*list, " and "), v) {
			*list += " and " + v
		}
	}
	addTo(&got.Machine, k.work.Machine)
	addTo(&got.Backend, k.work.Backend)
	k.work, k.base = got, got.Seconds
	return k, nil
}

// levels returns the kept levels of name (nil: none kept).
func (k *densityKeeper) levels(name string) (*pfode.Quantiles, error) {
	q := k.work.Levels[name]
	if q == nil {
		return nil, nil
	}
	return q.quantiles()
}

func (k *densityKeeper) keepLevels(name string, q *pfode.Quantiles) error {
	k.work.Levels[name] = quantilesToWork(q)
	return k.save()
}

// row returns the kept row of (model, trace, target), if any.
func (k *densityKeeper) row(model, trace, target string) (DensityExpRow, bool) {
	w, ok := k.rows[DensityExpRow{Model: model, Trace: trace, Target: target}.key()]
	return w, ok
}

func (k *densityKeeper) keep(w DensityExpRow) error {
	k.rows[w.key()] = w
	k.work.Rows = append(k.work.Rows, rowToWork(w))
	return k.save()
}

// elapsed is the computing time of this run and the earlier ones.
func (k *densityKeeper) elapsed() time.Duration {
	return time.Duration(k.base*float64(time.Second)) + time.Since(k.start)
}

func (k *densityKeeper) save() error {
	if k.dir == "" {
		return nil
	}
	k.work.Seconds = k.elapsed().Seconds()
	raw, err := json.Marshal(k.work)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(k.dir, densityWorkFile), raw)
}

// CheckDensityWork reads a work folder's density.json strictly, so that a
// malformed one is reported before any work; whether it matches the run
// is checked when the run knows its networks.
func CheckDensityWork(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("mnist-density: work folder %s is not a folder", dir)
	}
	_, err := readStrict(filepath.Join(dir, densityWorkFile), &densityWork{})
	return err
}
