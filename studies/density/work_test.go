package density

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/internal/stats"
)

// A kept row and the network's levels come back as they were (NaN, the
// "no level" of an unguided row, and an exploding trace's ±Inf included);
// the machines and the seconds add up over runs; a file made for other
// settings or networks, a malformed one and a row kept twice are refused
// as ErrWork (bad input).
func TestDensityWorkResumes(t *testing.T) {
	dir := t.TempDir()
	cfg := DensityExpQuick("")
	cfg.GridTraces = []string{"df-tm"}
	keep, err := openDensityWork(dir, cfg, "score:abc", "Go Backend")
	if err != nil {
		t.Fatal(err)
	}
	if keep.where() != "" {
		t.Errorf("nothing computed yet, but the work says %q", keep.where())
	}
	grid := mat.NewDense(1, Dim, nil)
	grid.Set(0, 3, 0.25)
	rows := []DensityExpRow{
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
	if err := keep.keepLevels("network", q); err != nil {
		t.Fatal(err)
	}

	again, err := openDensityWork(dir, cfg, "score:abc", "xla")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range rows {
		got, ok := again.row(w.Model, w.Trace, w.Target)
		if !ok {
			t.Fatalf("row %s not kept", w.key())
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
	if err := keep.keep(DensityExpRow{Model: "network", Trace: "hutchinson:4", Target: "none", Grid: []*mat.Dense{grid}}); err != nil {
		t.Fatal(err)
	}
	if k, err := openDensityWork(dir, cfg, "score:abc", "Go Backend"); err != nil {
		t.Fatal(err)
	} else if w, ok := k.row("network", "hutchinson:4", "none"); !ok || len(w.Grid) != 0 {
		t.Errorf("a row no figure draws kept %d grid images (found: %v)", len(w.Grid), ok)
	}
	if _, ok := again.row("network", "df-tm-c", "none"); ok {
		t.Error("a row never kept was found")
	}
	gq, err := again.levels("network")
	if err != nil || gq == nil || gq.Values[1][0] != -900 || gq.How != "test" {
		t.Errorf("levels came back as %+v (%v)", gq, err)
	}
	if again.where() != keep.where() || again.base <= 0 {
		t.Errorf("a run that only read: machines %q (the first run's: %q), %g s before it", again.where(), keep.where(), again.base)
	}
	if err := again.keep(DensityExpRow{Model: "network", Trace: "df-tm-c", Target: "none", Achieved: stats.Estimate{Mean: 2}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(again.work.Backend, "Go Backend and xla") || again.work.Seconds < again.base {
		t.Errorf("backends %q, %g s (%g before): the second run's not added", again.work.Backend, again.work.Seconds, again.base)
	}
	if _, err := openDensityWork(dir, cfg, "score:abc", "xla"); err != nil {
		t.Fatal(err)
	}

	other := cfg
	other.Samples++
	if _, err := openDensityWork(dir, other, "score:abc", "Go Backend"); !errors.Is(err, ErrWork) {
		t.Errorf("a work file of other settings: %v", err)
	}
	if _, err := openDensityWork(dir, cfg, "score:def", "Go Backend"); !errors.Is(err, ErrWork) {
		t.Errorf("a work file of other networks: %v", err)
	}
	full := DensityExpFull("")
	if k, err := openDensityWork(dir, full, "score:abc", "Go Backend"); err != nil || len(k.rows) != 0 {
		t.Errorf("the full profile read the quick profile's file: %v", err)
	}
	other = cfg
	other.Work, other.Dir = "elsewhere", "nets"
	if _, err := openDensityWork(dir, other, "score:abc", "Go Backend"); err != nil {
		t.Errorf("the folders are not settings: %v", err)
	}

	path := filepath.Join(dir, densityWorkFile(cfg.Profile))
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"truncated":     string(raw[:len(raw)/2]),
		"unknown field": strings.Replace(string(raw), `"rows"`, `"rowz"`, 1),
		"short grid":    strings.Replace(string(raw), `"grid":[[0,0,0,0.25,`, `"grid":[[0.25,`, 1),
		"row twice":     strings.Replace(string(raw), `"target":"q=0.5"`, `"target":"none"`, 1),
		"null levels":   strings.Replace(string(raw), `"network":{"times"`, `"network":null,"x":{"times"`, 1),
		"trailing data": string(raw) + "{}",
	} {
		if bad == string(raw) {
			t.Fatalf("%s: the corruption did not apply", name)
		}
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := openDensityWork(dir, cfg, "score:abc", "Go Backend"); !errors.Is(err, ErrWork) {
			t.Errorf("%s file: %v", name, err)
		}
		if name == "truncated" || name == "unknown field" || name == "trailing data" {
			if err := CheckDensityWork(dir); !errors.Is(err, ErrWork) {
				t.Errorf("CheckDensityWork: %s file: %v", name, err)
			}
		}
	}
}

// Shards share one folder: each computes every n-th row (mine), keeps its
// rows in its own file and never writes another's; every run reads all of
// the profile's files (rows, levels, seconds and machines); a malformed
// shard file is refused like the main one.
func TestDensityWorkShards(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run[1] *?")
	cfg := DensityExpQuick("")
	open := func(k, n int, backend string) *densityKeeper {
		t.Helper()
		c := cfg
		c.Shard, c.Shards = k, n
		keep, err := openDensityWork(dir, c, "score:abc", backend)
		if err != nil {
			t.Fatal(err)
		}
		return keep
	}
	// Positions 0…4 of shard 2 of 3 are 1 and 4; without shards, all.
	var got []int
	s2 := open(2, 3, "Go Backend")
	for p := range 5 {
		if s2.mine() {
			got = append(got, p)
		}
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 4 {
		t.Errorf("shard 2 of 3 takes positions %v of 0…4, want [1 4]", got)
	}
	whole := open(0, 0, "Go Backend")
	for p := range 5 {
		if !whole.mine() {
			t.Errorf("the run without shards skips position %d", p)
		}
	}

	s1 := open(1, 2, "Go Backend")
	if err := s1.keep(DensityExpRow{Model: "network", Trace: "df-tm", Target: "none", Achieved: stats.Estimate{Mean: 1}}); err != nil {
		t.Fatal(err)
	}
	q := &pfode.Quantiles{Times: []float64{1, 0.01}, Ps: []float64{0.5}, Values: [][]float64{{-1000}, {-800}}, How: "shard 1"}
	if err := s1.keepLevels("network", q); err != nil {
		t.Fatal(err)
	}
	s2 = open(2, 2, "xla")
	if lv, err := s2.levels("network"); err != nil || lv == nil || lv.How != "shard 1" {
		t.Errorf("shard 2 does not read shard 1's levels: %v, %v", lv, err)
	}
	if _, ok := s2.row("network", "df-tm", "none"); !ok {
		t.Error("shard 2 does not read shard 1's row")
	}
	if err := s2.keep(DensityExpRow{Model: "network", Trace: "df-tm", Target: "offset +300", Achieved: stats.Estimate{Mean: 2}}); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[int]string{1: "none", 2: "offset +300"} {
		var w densityWork
		if _, err := readStrict("test", filepath.Join(dir, DensityShardFile(cfg.Profile, k, 2)), &w); err != nil {
			t.Fatal(err)
		}
		if len(w.Rows) != 1 || w.Rows[0].Target != want {
			t.Errorf("shard %d's file holds %d rows (%+v), want its own row %q only", k, len(w.Rows), w.Rows, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, densityWorkFile(cfg.Profile))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shard wrote the main file: %v", err)
	}
	all := open(0, 0, "Go Backend")
	for _, tg := range []string{"none", "offset +300"} {
		if _, ok := all.row("network", "df-tm", tg); !ok {
			t.Errorf("the whole run does not read row %q", tg)
		}
	}
	if w := all.where(); !strings.Contains(w, "Go Backend") || !strings.Contains(w, "xla") {
		t.Errorf("the whole run's machines: %q, want both shards' backends", w)
	}
	if all.readSeconds() <= 0 || all.base != 0 {
		t.Errorf("the whole run read %g s of earlier work (%g s in its own file)", all.readSeconds(), all.base)
	}
	if err := CheckDensityWork(dir); err != nil {
		t.Fatal(err)
	}
	// A shard's file keeps its own seconds only.
	var w1, w2 densityWork
	if _, err := readStrict("test", filepath.Join(dir, DensityShardFile(cfg.Profile, 1, 2)), &w1); err != nil {
		t.Fatal(err)
	}
	w1.Seconds = 1000
	raw1, _ := json.Marshal(w1)
	if err := os.WriteFile(filepath.Join(dir, DensityShardFile(cfg.Profile, 1, 2)), raw1, 0o644); err != nil {
		t.Fatal(err)
	}
	s2 = open(2, 2, "xla")
	if err := s2.keep(DensityExpRow{Model: "network", Trace: "df-tm", Target: "offset -300"}); err != nil {
		t.Fatal(err)
	}
	if _, err := readStrict("test", filepath.Join(dir, DensityShardFile(cfg.Profile, 2, 2)), &w2); err != nil || w2.Seconds >= 1000 {
		t.Errorf("shard 2's file keeps %g s (%v): it counted shard 1's 1000 s", w2.Seconds, err)
	}
	if all := open(0, 0, "Go Backend"); all.readSeconds() < 1000 {
		t.Errorf("the whole run read %g s, want shard 1's 1000 s and shard 2's", all.readSeconds())
	}
	// A shard after the first waits for the first's levels; levels that
	// differ between files are refused.
	c3 := cfg
	c3.Shard, c3.Shards = 3, 3
	k3, err := openDensityWork(dir, c3, "score:abc", "Go Backend")
	if err != nil {
		t.Fatal(err)
	}
	if lv, err := k3.awaitLevels(context.Background(), "network", time.Millisecond, io.Discard); err != nil || lv.How != "shard 1" {
		t.Errorf("awaitLevels: %v, %v; want shard 1's", lv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if _, err := k3.awaitLevels(ctx, "mixture", time.Millisecond, io.Discard); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("awaitLevels of levels no file has: %v, want to wait until cancelled", err)
	}
	cancel()
	other := &pfode.Quantiles{Times: []float64{1, 0.01}, Ps: []float64{0.5}, Values: [][]float64{{-1000}, {-801}}, How: "shard 1"}
	if err := k3.keepLevels("network", other); err != nil {
		t.Fatal(err)
	}
	if _, err := openDensityWork(dir, cfg, "score:abc", "Go Backend"); !errors.Is(err, ErrWork) {
		t.Errorf("two files with different levels: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, DensityShardFile(cfg.Profile, 3, 3))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DensityShardFile(cfg.Profile, 2, 2))
	if err := os.WriteFile(path, []byte(`{"settings":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openDensityWork(dir, cfg, "score:abc", "Go Backend"); !errors.Is(err, ErrWork) {
		t.Errorf("a truncated shard file: %v", err)
	}
	if err := CheckDensityWork(dir); !errors.Is(err, ErrWork) {
		t.Errorf("CheckDensityWork: a truncated shard file: %v", err)
	}
	for _, s := range []string{"1/2", "2/2", "64/64"} {
		if _, _, err := ParseShard(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "1", "0/2", "3/2", "1/0", "-1/2", "1/65", "a/b", "1/2/3"} {
		if _, _, err := ParseShard(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
