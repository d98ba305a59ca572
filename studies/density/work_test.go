package density

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/internal/workstore/locktest"
	"github.com/dfx-lab/dfx/mnist"
)

// checkWork is the experiment's strict read of a work folder.
func checkWork(dir string) error {
	return workstore.Check("mnist-density", dir, MNISTQuick().stem(), MNISTFull().stem())
}

// A kept row and the network's levels come back as they were (NaN, the
// "no level" of an unguided row, and an exploding trace's ±Inf included);
// the machines and the seconds add up over runs; a file made for other
// settings or networks, a malformed one and a row kept twice are refused
// as ErrWork (bad input).
func TestDensityWorkResumes(t *testing.T) {
	dir := t.TempDir()
	cfg := MNISTQuick()
	cfg.GridTraces = []string{"df-tm"}
	const dim = mnist.Dim
	keep, err := openStore("test", dir, cfg, "score:abc", "Go Backend", dim)
	if err != nil {
		t.Fatal(err)
	}
	if keep.Where() != "" {
		t.Errorf("nothing computed yet, but the work says %q", keep.Where())
	}
	grid := mat.NewDense(1, dim, nil)
	grid.Set(0, 3, 0.25)
	rows := []Row{
		{Model: "network", Trace: "df-tm", Target: "none", Level: math.NaN(), LevelNats: math.NaN(), Achieved: stats.Estimate{Mean: 1.5, SE: 0.1},
			Tracked: stats.Estimate{Mean: 1.4, SE: 0.2}, AbsMiss: stats.Estimate{Mean: math.NaN(), SE: math.NaN()}, Ink: 0.2, Frame: 0.03, Detail: 0.1,
			PerSample: 1234567891 * time.Nanosecond, NFE: 400, Grid: []*mat.Dense{grid}},
		{Model: "network", Trace: "df-tm", Target: "offset -300", Level: math.NaN(), LevelNats: math.NaN(), Achieved: stats.Estimate{Mean: math.Inf(1), SE: math.NaN()},
			Tracked: stats.Estimate{Mean: math.Inf(-1), SE: math.NaN()}, AbsMiss: stats.Estimate{Mean: math.NaN(), SE: math.NaN()}, Ink: math.NaN(), Detail: math.Inf(1), NFE: 400},
		{Model: "network", Trace: "df-tm", Target: "q=0.5", Level: 1.2, LevelNats: -900, Achieved: stats.Estimate{Mean: 1.25, SE: 0.01},
			Tracked: stats.Estimate{Mean: 1.2, SE: 0.01}, AbsMiss: stats.Estimate{Mean: 0.05, SE: 0.01}, SolverErr: 1e-3, Limited: 0.5, NFE: 400},
	}
	for _, w := range rows {
		if err := keep.keep(w); err != nil {
			t.Fatal(err)
		}
	}
	q := &pfode.Quantiles{Times: []float64{1, 0.5, 0.01}, Ps: []float64{0.5}, Values: [][]float64{{-1000}, {-900}, {-800}}, How: "test"}
	if err := keep.keepLevels(q); err != nil {
		t.Fatal(err)
	}

	again, err := openStore("test", dir, cfg, "score:abc", "xla", dim)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rows {
		got, ok, err := again.row(w.Model, w.Trace, w.Target, dim)
		if err != nil || !ok {
			t.Fatalf("row %s not kept (%v)", w.key(), err)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(got.Level, w.Level) || !same(got.AbsMiss.Mean, w.AbsMiss.Mean) || !same(got.Achieved.Mean, w.Achieved.Mean) || !same(got.Tracked.Mean, w.Tracked.Mean) ||
			!same(got.Ink, w.Ink) || !same(got.Detail, w.Detail) || got.PerSample != w.PerSample || got.NFE != w.NFE || len(got.Grid) != len(w.Grid) {
			t.Errorf("row %s came back as %+v", w.key(), got)
		}
		for i := range w.Grid {
			if !mat.Equal(got.Grid[i], w.Grid[i]) {
				t.Errorf("row %s: grid image %d changed", w.key(), i)
			}
		}
	}
	if err := keep.keep(Row{Model: "network", Trace: "hutchinson:4", Target: "none", Grid: []*mat.Dense{grid}}); err != nil {
		t.Fatal(err)
	}
	if k, err := openStore("test", dir, cfg, "score:abc", "Go Backend", dim); err != nil {
		t.Fatal(err)
	} else if w, ok, _ := k.row("network", "hutchinson:4", "none", dim); !ok || len(w.Grid) != 0 {
		t.Errorf("a row no figure draws kept %d grid images (found: %v)", len(w.Grid), ok)
	}
	if _, ok, _ := again.row("network", "df-tm-c", "none", dim); ok {
		t.Error("a row never kept was found")
	}
	gq, err := again.levels()
	if err != nil || gq == nil || gq.Values[1][0] != -900 || gq.How != "test" {
		t.Errorf("levels came back as %+v (%v)", gq, err)
	}
	if again.Where() != keep.Where() || again.ReadSeconds() <= 0 {
		t.Errorf("a run that only read: machines %q (the first run's: %q), %g s before it", again.Where(), keep.Where(), again.ReadSeconds())
	}
	before := again.ReadSeconds()
	if err := again.keep(Row{Model: "network", Trace: "df-tm-c", Target: "none", Achieved: stats.Estimate{Mean: 2}}); err != nil {
		t.Fatal(err)
	}
	if w := again.Where(); !strings.Contains(w, "Go Backend and xla") || readFile(t, filepath.Join(dir, "density-quick.json")).Seconds < before {
		t.Errorf("where %q: the second run's backend or seconds not added", w)
	}
	if _, err := openStore("test", dir, cfg, "score:abc", "xla", dim); err != nil {
		t.Fatal(err)
	}

	other := cfg
	other.Samples++
	if _, err := openStore("test", dir, other, "score:abc", "Go Backend", dim); !errors.Is(err, workstore.ErrWork) {
		t.Errorf("a work file of other settings: %v", err)
	}
	if _, err := openStore("test", dir, cfg, "score:def", "Go Backend", dim); !errors.Is(err, workstore.ErrWork) {
		t.Errorf("a work file of other networks: %v", err)
	}
	if k, err := openStore("test", dir, MNISTFull(), "score:abc", "Go Backend", dim); err != nil || k.Len() != 0 {
		t.Errorf("the full profile read the quick profile's file: %v", err)
	}
	corrupt(t, dir, cfg, dim)
}

// corrupt damages the quick profile's work file of dir in several ways,
// each refused as ErrWork.
func corrupt(t *testing.T, dir string, cfg Config, dim int) {
	path := filepath.Join(dir, workstore.Shard{}.File(cfg.stem()))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	twice := strings.Replace(strings.Replace(string(raw), `"target":"q=0.5"`, `"target":"none"`, 1), `"key":"network|df-tm|q=0.5"`, `"key":"network|df-tm|none"`, 1)
	for name, bad := range map[string]string{
		"truncated":     string(raw[:len(raw)/2]),
		"unknown field": strings.Replace(string(raw), `"rows"`, `"rowz"`, 1),
		"unknown row":   strings.Replace(string(raw), `"level_nats"`, `"level_natz"`, 1),
		"short grid":    strings.Replace(string(raw), `"grid":[[0,0,0,0.25,`, `"grid":[[0.25,`, 1),
		"row twice":     twice,
		"misfiled row":  strings.Replace(string(raw), `"target":"q=0.5"`, `"target":"none"`, 1),
		"null levels":   strings.Replace(string(raw), `"levels network":{"times"`, `"levels network":null,"x":{"times"`, 1),
		"trailing data": string(raw) + "{}",
	} {
		if bad == string(raw) {
			t.Fatalf("%s: the corruption did not apply", name)
		}
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := openStore("test", dir, cfg, "score:abc", "Go Backend", dim); !errors.Is(err, workstore.ErrWork) {
			t.Errorf("%s file: %v", name, err)
		}
		if name == "truncated" || name == "unknown field" || name == "trailing data" {
			if err := checkWork(dir); !errors.Is(err, workstore.ErrWork) {
				t.Errorf("checkWork: %s file: %v", name, err)
			}
		}
	}
}

// Shards share one folder: each computes every n-th row (Mine), keeps its
// rows in its own file and never writes another's; every run reads all of
// the profile's files (rows, levels, seconds and machines); a malformed
// shard file is refused like the main one.
func TestDensityWorkShards(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run[1] *?")
	cfg := MNISTQuick()
	const dim = mnist.Dim
	open := func(k, n int, backend string) *store {
		t.Helper()
		c := cfg
		if n > 0 {
			c.Shard = fmt.Sprintf("%d/%d", k, n)
		}
		keep, err := openStore("test", dir, c, "score:abc", backend, dim)
		if err != nil {
			t.Fatal(err)
		}
		return keep
	}
	file := func(k, n int) string { return filepath.Join(dir, workstore.Shard{K: k, N: n}.File(cfg.stem())) }
	// Positions 0…4 of shard 2 of 3 are 1 and 4; without shards, all.
	var got []int
	s2 := open(2, 3, "Go Backend")
	for p := range 5 {
		if s2.Mine() {
			got = append(got, p)
		}
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 4 {
		t.Errorf("shard 2 of 3 takes positions %v of 0…4, want [1 4]", got)
	}
	whole := open(0, 0, "Go Backend")
	for p := range 5 {
		if !whole.Mine() {
			t.Errorf("the run without shards skips position %d", p)
		}
	}

	s1 := open(1, 2, "Go Backend")
	if err := s1.keep(Row{Model: "network", Trace: "df-tm", Target: "none", Achieved: stats.Estimate{Mean: 1}}); err != nil {
		t.Fatal(err)
	}
	q := &pfode.Quantiles{Times: []float64{1, 0.01}, Ps: []float64{0.5}, Values: [][]float64{{-1000}, {-800}}, How: "shard 1"}
	if err := s1.keepLevels(q); err != nil {
		t.Fatal(err)
	}
	s2 = open(2, 2, "xla")
	if lv, err := s2.levels(); err != nil || lv == nil || lv.How != "shard 1" {
		t.Errorf("shard 2 does not read shard 1's levels: %v, %v", lv, err)
	}
	if _, ok, _ := s2.row("network", "df-tm", "none", dim); !ok {
		t.Error("shard 2 does not read shard 1's row")
	}
	if err := s2.keep(Row{Model: "network", Trace: "df-tm", Target: "offset +300", Achieved: stats.Estimate{Mean: 2}}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[int]string{1: "network|df-tm|none", 2: "network|df-tm|offset +300"} {
		if w := readFile(t, file(k, 2)); len(w.Rows) != 1 || w.Rows[0].Key != want {
			t.Errorf("shard %d's file holds %d rows (%+v), want its own row %q only", k, len(w.Rows), w.Rows, want)
		}
	}
	if _, err := os.Stat(file(0, 0)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shard wrote the main file: %v", err)
	}
	all := open(0, 0, "Go Backend")
	for _, tg := range []string{"none", "offset +300"} {
		if _, ok, _ := all.row("network", "df-tm", tg, dim); !ok {
			t.Errorf("the whole run does not read row %q", tg)
		}
	}
	if w := all.Where(); !strings.Contains(w, "Go Backend") || !strings.Contains(w, "xla") {
		t.Errorf("the whole run's machines: %q, want both shards' backends", w)
	}
	if all.ReadSeconds() <= 0 {
		t.Errorf("the whole run read %g s of earlier work", all.ReadSeconds())
	}
	if err := checkWork(dir); err != nil {
		t.Fatal(err)
	}
	shardSeconds(t, file, open)
	shardLevels(t, dir, cfg, file, dim)
}

// shardSeconds: a shard's file keeps its own seconds only; the whole run
// reads every file's.
func shardSeconds(t *testing.T, file func(k, n int) string, open func(k, n int, backend string) *store) {
	raw, err := os.ReadFile(file(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	var w1 map[string]any
	if err := json.Unmarshal(raw, &w1); err != nil {
		t.Fatal(err)
	}
	w1["seconds"] = 1000
	raw1, _ := json.Marshal(w1)
	if err := os.WriteFile(file(1, 2), raw1, 0o644); err != nil {
		t.Fatal(err)
	}
	s2 := open(2, 2, "xla")
	if err := s2.keep(Row{Model: "network", Trace: "df-tm", Target: "offset -300"}); err != nil {
		t.Fatal(err)
	}
	if w2 := readFile(t, file(2, 2)); w2.Seconds >= 1000 {
		t.Errorf("shard 2's file keeps %g s: it counted shard 1's 1000 s", w2.Seconds)
	}
	if all := open(0, 0, "Go Backend"); all.ReadSeconds() < 1000 {
		t.Errorf("the whole run read %g s, want shard 1's 1000 s and shard 2's", all.ReadSeconds())
	}
}

// shardLevels: a shard after the first waits for the first's levels;
// levels that differ between files, and a truncated shard file, are
// refused.
func shardLevels(t *testing.T, dir string, cfg Config, file func(k, n int) string, dim int) {
	c3 := cfg
	c3.Shard = "3/3"
	k3, err := openStore("test", dir, c3, "score:abc", "Go Backend", dim)
	if err != nil {
		t.Fatal(err)
	}
	if lv, err := k3.awaitLevels(context.Background(), time.Millisecond, io.Discard); err != nil || lv.How != "shard 1" {
		t.Errorf("awaitLevels: %v, %v; want shard 1's", lv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := k3.AwaitValue(ctx, "levels mixture", &quantilesWork{}, time.Millisecond, io.Discard); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AwaitValue of a value no file has: %v, want to wait until cancelled", err)
	}
	cancel()
	other := &pfode.Quantiles{Times: []float64{1, 0.01}, Ps: []float64{0.5}, Values: [][]float64{{-1000}, {-801}}, How: "shard 1"}
	if err := k3.keepLevels(other); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore("test", dir, cfg, "score:abc", "Go Backend", dim); !errors.Is(err, workstore.ErrWork) {
		t.Errorf("two files with different levels: %v", err)
	}
	if err := os.Remove(file(3, 3)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file(2, 2), []byte(`{"settings":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore("test", dir, cfg, "score:abc", "Go Backend", dim); !errors.Is(err, workstore.ErrWork) {
		t.Errorf("a truncated shard file: %v", err)
	}
	if err := checkWork(dir); !errors.Is(err, workstore.ErrWork) {
		t.Errorf("checkWork: a truncated shard file: %v", err)
	}
}

// TestSecondRunOnOneWorkFileIsRefused: while a run holds a work file's
// lock, the experiment on that file is refused with ErrWork naming the
// holder, before any work; a shard's own file is another lock; each run
// gives its lock back when it returns. The context is cancelled, so that
// a run that ignored the lock would end at once with context.Canceled.
func TestSecondRunOnOneWorkFileIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the committed networks")
	}
	locktest.SkipUnlessLockable(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	work := t.TempDir()
	cfg := MNISTQuick()
	env := report.Env{Work: work}
	main := workstore.Shard{}.File(cfg.stem())
	held := locktest.Hold(t, work, main)
	_, err := runImages(ctx, mnistProblem(cfg), cfg, env)
	locktest.Refused(t, "mnist-density", err)
	shard := cfg
	shard.Shard = "1/2"
	if _, err := runImages(ctx, mnistProblem(shard), shard, env); errors.Is(err, workstore.ErrWork) {
		t.Errorf("a shard, whose file is its own, refused: %v", err)
	}
	locktest.Released(t, "a shard", work, workstore.Shard{K: 1, N: 2}.File(cfg.stem()))
	held.Release()
	if _, err := runImages(ctx, mnistProblem(cfg), cfg, env); errors.Is(err, workstore.ErrWork) {
		t.Errorf("mnist-density after the lock was released: %v", err)
	}
	locktest.Released(t, "mnist-density", work, main)
}
