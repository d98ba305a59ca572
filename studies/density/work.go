package mnist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// The MNIST density experiment keeps its work in DensityExpConfig.Work
// (density-<profile>.json): the network's reference levels and every
// finished row, saved after each, so that a run of hours resumes where an
// earlier one stopped, or reads rows computed on another machine (a GPU).
// The settings and the networks' digests must match the run's for the file
// to be used. One run at a time per file (lockWork): a second run on the
// same file is refused at once, since two would each rewrite it with their
// own rows. Shards (DensityExpConfig.Shard) each keep their own file
// (density-<profile>.shard-k-of-n.json) and read the others', so that they
// can run side by side; every run reads all of the profile's files.

// densityWorkFile is the work file of a profile.
func densityWorkFile(profile string) string { return "density-" + profile + ".json" }

// DensityShardFile is the work file of shard k of n of a profile: a shard
// run (DensityExpConfig.Shard) keeps its rows there, so that shards can run
// side by side in one folder; every run reads all of a profile's files.
func DensityShardFile(profile string, k, n int) string {
	return fmt.Sprintf("density-%s.shard-%d-of-%d.json", profile, k, n)
}

// densityFiles is the profile's work files in dir: the main file first,
// then the shards' that exist, by n and then k.
func densityFiles(dir, profile string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	type shard struct {
		k, n int
		name string
	}
	var shards []shard
	prefix := "density-" + profile + ".shard-"
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		var k, n int
		if _, err := fmt.Sscanf(rest, "%d-of-%d.json", &k, &n); err != nil || e.Name() != DensityShardFile(profile, k, n) {
			continue
		}
		shards = append(shards, shard{k, n, e.Name()})
	}
	slices.SortFunc(shards, func(a, b shard) int {
		if a.n != b.n {
			return a.n - b.n
		}
		return a.k - b.k
	})
	files := []string{filepath.Join(dir, densityWorkFile(profile))}
	for _, sh := range shards {
		files = append(files, filepath.Join(dir, sh.name))
	}
	return files, nil
}

// ParseShard reads "k/n" (1 ≤ k ≤ n ≤ 64): shard k of n, both plain
// decimal digits (no sign, space or base prefix).
func ParseShard(s string) (k, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	digits := func(v string) bool { return v != "" && strings.Trim(v, "0123456789") == "" }
	ok = ok && digits(a) && digits(b)
	if ok {
		k, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || k < 1 || n < 1 || k > n || n > 64 {
		return 0, 0, fmt.Errorf("shard %q: want k/n with 1 ≤ k ≤ n ≤ 64, e.g. 1/2", s)
	}
	return k, n, nil
}

// densityWork is Work/density-<profile>.json.
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

// densityRowWork is a DensityExpRow. Every float is a wfloat, so that NaN
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

func (w DensityExpRow) key() string { return w.Model + "|" + w.Trace + "|" + w.Target }

func rowToWork(w DensityExpRow, withGrid bool) densityRowWork {
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

func (o densityRowWork) row() (DensityExpRow, error) {
	est := func(e [2]wfloat) stats.Estimate { return stats.Estimate{Mean: float64(e[0]), SE: float64(e[1])} }
	w := DensityExpRow{Model: o.Model, Trace: o.Trace, Target: o.Target, Level: float64(o.Level), LevelNats: float64(o.LevelNats),
		Achieved: est(o.Achieved), Tracked: est(o.Tracked), AbsMiss: est(o.AbsMiss), Ink: float64(o.Ink), Frame: float64(o.Frame), Detail: float64(o.Detail),
		Limited: float64(o.Limited), SolverErr: float64(o.SolverErr), PerSample: time.Duration(o.PerSample), NFE: o.NFE}
	if o.PerSample < 0 || o.NFE < 0 || len(o.Grid) > 64 {
		return DensityExpRow{}, fmt.Errorf("row %s: %d ns a sample, %d NFE, %d grid images: %w", w.key(), o.PerSample, o.NFE, len(o.Grid), ErrWork)
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
	dir, file string
	work      densityWork
	rows      map[string]DensityExpRow
	start     time.Time
	base      float64 // seconds of earlier runs
	// machine and backend are this run's, added to the file's lists at
	// its first save (a run that only reads computed nothing).
	machine, backend string
	added            bool
	// grid says which rows' samples the figures draw (the others keep no
	// grid).
	grid func(model, trace string) bool
	// The other files of the folder (the main file or the shards' files
	// other than this run's): their rows and levels are read, their
	// seconds and machines counted, and they are never written.
	otherLevels   map[string]*quantilesWork
	otherSeconds  float64
	otherMachines []string
	otherBackends []string
	// shard, shards: this run computes the rows whose position (in table
	// order, counted by mine) is shard−1 modulo shards; 0: every row.
	shard, shards, pos int
	profile            string
}

// mine reports whether the next row in table order is this run's to
// compute, and counts it.
func (k *densityKeeper) mine() bool {
	p := k.pos
	k.pos++
	return k.shards == 0 || p%k.shards == k.shard-1
}

// openDensityWork reads dir's work files for a run of cfg on networks of
// digest (a fresh keeper when there is none or dir is ""): this run's own
// file (the main one, or its shard's) and every other file of the profile,
// whose rows are read too. A file made with other settings or networks,
// or malformed, is an error, never silently replaced.
func openDensityWork(dir string, cfg DensityExpConfig, digest, backend string) (*densityKeeper, error) {
	settings, err := densitySettings(cfg)
	if err != nil {
		return nil, err
	}
	k := &densityKeeper{dir: dir, file: densityWorkFile(cfg.Profile), rows: map[string]DensityExpRow{}, start: time.Now(), machine: Machine(), backend: backend,
		work:        densityWork{Settings: settings, Digest: digest, Levels: map[string]*quantilesWork{}},
		grid:        func(model, trace string) bool { return model == "mixture" || slices.Contains(cfg.GridTraces, trace) },
		otherLevels: map[string]*quantilesWork{}, shard: cfg.Shard, shards: cfg.Shards, profile: cfg.Profile}
	if cfg.Shards > 0 {
		k.file = DensityShardFile(cfg.Profile, cfg.Shard, cfg.Shards)
	}
	if dir == "" {
		return k, nil
	}
	all, err := densityFiles(dir, cfg.Profile)
	if err != nil {
		return nil, err
	}
	// This run's own file first: its rows are the ones it writes back.
	own := filepath.Join(dir, k.file)
	files := []string{own}
	for _, f := range all {
		if f != own {
			files = append(files, f)
		}
	}
	for i, path := range files {
		got, rows, found, err := readDensityWork(path, settings, digest)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if i == 0 {
			k.work, k.base = *got, got.Seconds
		} else {
			k.otherSeconds += got.Seconds
			k.otherMachines = appendNew(k.otherMachines, got.Machine)
			k.otherBackends = appendNew(k.otherBackends, got.Backend)
			for name, q := range got.Levels {
				prev := k.work.Levels[name]
				if prev == nil {
					prev = k.otherLevels[name]
				}
				if prev != nil && !sameLevels(prev, q) {
					return nil, fmt.Errorf("mnist-density: %s: its %s levels differ from another file's of %s: the rows of one report must share one set of levels (let shard 1 find them before the others start, or remove the file): %w", path, name, dir, ErrWork)
				}
				if k.otherLevels[name] == nil {
					k.otherLevels[name] = q
				}
			}
		}
		for _, w := range rows {
			if _, seen := k.rows[w.key()]; !seen {
				k.rows[w.key()] = w
			}
		}
	}
	return k, nil
}

// sameLevels reports whether two kept sets of levels are the same.
func sameLevels(a, b *quantilesWork) bool {
	return a.How == b.How && slices.Equal(a.Times, b.Times) && slices.Equal(a.Ps, b.Ps) &&
		slices.EqualFunc(a.Values, b.Values, func(x, y []float64) bool { return slices.Equal(x, y) })
}

// awaitLevels waits until another file of the folder holds the levels of
// name (a shard other than the first waits for shard 1's, so that every
// shard steers to the same levels), reading the files every poll.
func (k *densityKeeper) awaitLevels(ctx context.Context, name string, poll time.Duration, log io.Writer) (*pfode.Quantiles, error) {
	settings, digest := k.work.Settings, k.work.Digest
	told := false
	for {
		files, err := densityFiles(k.dir, k.profile)
		if err != nil {
			return nil, err
		}
		for _, path := range files {
			if filepath.Base(path) == k.file {
				continue
			}
			got, _, found, err := readDensityWork(path, settings, digest)
			if err != nil {
				return nil, err
			}
			if found && got.Levels[name] != nil {
				k.otherLevels[name] = got.Levels[name]
				return got.Levels[name].quantiles()
			}
		}
		if !told {
			fmt.Fprintf(log, "mnist-density: shard %d/%d waits for shard 1 to save the %s levels in %s\n", k.shard, k.shards, name, k.dir)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// appendNew adds the items of an " and "-joined list to list, each once.
func appendNew(list []string, joined string) []string {
	if joined == "" {
		return list
	}
	for _, v := range strings.Split(joined, " and ") {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// readDensityWork reads one work file strictly: its settings and networks
// must be the run's, its levels and rows well formed, no row twice.
func readDensityWork(path, settings, digest string) (*densityWork, []DensityExpRow, bool, error) {
	var got densityWork
	found, err := readStrict("mnist-density", path, &got)
	if err != nil || !found {
		return nil, nil, found, err
	}
	if got.Digest != digest {
		return nil, nil, true, fmt.Errorf("mnist-density: %s was made with other networks (%s; this run: %s) (remove it, or use another work folder): %w", path, got.Digest, digest, ErrWork)
	}
	if got.Settings != settings {
		return nil, nil, true, fmt.Errorf("mnist-density: %s was made with other settings (%s; this run: %s) (remove it, or use another work folder): %w", path, got.Settings, settings, ErrWork)
	}
	if got.Levels == nil {
		got.Levels = map[string]*quantilesWork{}
	}
	for name, q := range got.Levels {
		if q == nil {
			return nil, nil, true, fmt.Errorf("mnist-density: %s: %s levels are null: %w", path, name, ErrWork)
		}
		if _, err := q.quantiles(); err != nil {
			return nil, nil, true, fmt.Errorf("mnist-density: %s: %s %w", path, name, err)
		}
	}
	var rows []DensityExpRow
	seen := map[string]bool{}
	for _, o := range got.Rows {
		w, err := o.row()
		if err != nil {
			return nil, nil, true, fmt.Errorf("mnist-density: %s: %w", path, err)
		}
		if seen[w.key()] {
			return nil, nil, true, fmt.Errorf("mnist-density: %s: row %s twice: %w", path, w.key(), ErrWork)
		}
		seen[w.key()] = true
		rows = append(rows, w)
	}
	if got.Seconds < 0 || math.IsNaN(got.Seconds) || math.IsInf(got.Seconds, 0) {
		return nil, nil, true, fmt.Errorf("mnist-density: %s: %g seconds: %w", path, got.Seconds, ErrWork)
	}
	return &got, rows, true, nil
}

// levels returns the kept levels of name (nil: none kept).
func (k *densityKeeper) levels(name string) (*pfode.Quantiles, error) {
	q := k.work.Levels[name]
	if q == nil {
		q = k.otherLevels[name]
	}
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
	if k.dir == "" {
		return nil
	}
	k.work.Rows = append(k.work.Rows, rowToWork(w, k.grid(w.Model, w.Trace)))
	return k.save()
}

// elapsed is the computing time of this run and the earlier ones, in
// every file of the folder.
func (k *densityKeeper) elapsed() time.Duration {
	return time.Duration((k.base+k.otherSeconds)*float64(time.Second)) + time.Since(k.start)
}

// rowTime is the computing time that made the folder's rows and levels:
// the earlier runs' and, when this run kept something, this run's so far
// (a run that only reads them and writes the report adds nothing).
func (k *densityKeeper) rowTime() time.Duration {
	if !k.added {
		return time.Duration(k.readSeconds() * float64(time.Second))
	}
	return k.elapsed()
}

// ownElapsed is the computing time kept in this run's own file.
func (k *densityKeeper) ownElapsed() time.Duration {
	return time.Duration(k.base*float64(time.Second)) + time.Since(k.start)
}

// readSeconds is the computing time of the earlier runs, in every file.
func (k *densityKeeper) readSeconds() float64 { return k.base + k.otherSeconds }

// where is the machines and backends that computed the kept work, in every
// file of the folder ("" when none did yet).
func (k *densityKeeper) where() string {
	machines := appendNew(appendNew(nil, k.work.Machine), strings.Join(k.otherMachines, " and "))
	backends := appendNew(appendNew(nil, k.work.Backend), strings.Join(k.otherBackends, " and "))
	if len(machines) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, %s backend", strings.Join(machines, " and "), strings.Join(backends, " and "))
}

func (k *densityKeeper) save() error {
	if k.dir == "" {
		return nil
	}
	if !k.added {
		k.added = true
		add := func(list *string, v string) {
			switch {
			case *list == "":
				*list = v
			case !slices.Contains(strings.Split(*list, " and "), v):
				*list += " and " + v
			}
		}
		add(&k.work.Machine, k.machine)
		add(&k.work.Backend, k.backend)
	}
	k.work.Seconds = k.ownElapsed().Seconds()
	raw, err := json.Marshal(k.work)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(k.dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(k.dir, k.file), raw)
}

// CheckDensityWork reads a work folder's files strictly, so that a
// malformed one is reported before any work; whether one matches the run
// is checked when the run knows its networks.
func CheckDensityWork(dir string) error {
	if dir == "" {
		return nil
	}
	if err := checkWorkDir("mnist-density", dir); err != nil {
		return err
	}
	for _, p := range []report.Profile{report.Quick, report.Full} {
		files, err := densityFiles(dir, string(p))
		if err != nil {
			return err
		}
		for _, f := range files {
			if _, err := readStrict("mnist-density", f, &densityWork{}); err != nil {
				return err
			}
		}
	}
	return nil
}
