package workstore

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testConfig struct {
	N    int
	Name string
	Dir  string `json:"-"`
}

type testRow struct{ Key, V string }

func open(t *testing.T, dir string, cfg testConfig, nets string, sh Shard) *Store {
	t.Helper()
	s, err := Open(Options{Who: "test", Dir: dir, Stem: "work-quick", Config: cfg, Networks: nets, Shard: sh, Backend: "go",
		Row: func(raw json.RawMessage) (string, error) {
			var r testRow
			err := DecodeStrict(raw, &r)
			return r.Key, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rows and values come back in a later run; a run of another config or
// other networks is refused (ErrWork), folders left out of the config are
// not settings; a row filed under another key is refused.
func TestStoreResumesAndRefusesOtherWork(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig{N: 3, Name: "a", Dir: "x"}
	s := open(t, dir, cfg, "net:1", Shard{})
	if err := s.Put("r1", testRow{"r1", "one"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetValue("levels", []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = "elsewhere"
	again := open(t, dir, cfg, "net:1", Shard{})
	var r testRow
	if found, err := again.Get("r1", &r); err != nil || !found || r.V != "one" {
		t.Errorf("row r1 came back as %+v, %v (%v)", r, found, err)
	}
	var lv []float64
	if found, err := again.Value("levels", &lv); err != nil || !found || len(lv) != 2 {
		t.Errorf("value came back as %v, %v (%v)", lv, found, err)
	}
	if again.ReadSeconds() <= 0 || !strings.Contains(again.Where(), "go backend") {
		t.Errorf("earlier work: %g s on %q", again.ReadSeconds(), again.Where())
	}
	for name, o := range map[string]struct {
		cfg  testConfig
		nets string
	}{"other config": {testConfig{N: 4, Name: "a"}, "net:1"}, "other networks": {cfg, "net:2"}} {
		if _, err := Open(Options{Who: "test", Dir: dir, Stem: "work-quick", Config: o.cfg, Networks: o.nets}); !errors.Is(err, ErrWork) {
			t.Errorf("%s: %v, want ErrWork", name, err)
		}
	}
	path := filepath.Join(dir, "work-quick.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), `"key":"r1"`, `"key":"r2"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Who: "test", Dir: dir, Stem: "work-quick", Config: cfg, Networks: "net:1",
		Row: func(raw json.RawMessage) (string, error) {
			var r testRow
			err := DecodeStrict(raw, &r)
			return r.Key, err
		}}); !errors.Is(err, ErrWork) {
		t.Errorf("a misfiled row: %v, want ErrWork", err)
	}
	if err := Check("test", dir, "work-quick"); err != nil {
		t.Errorf("Check of a well-formed file: %v", err)
	}
	if err := os.WriteFile(path, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Check("test", dir, "work-quick"); !errors.Is(err, ErrWork) || !strings.Contains(err.Error(), "work-quick.json") {
		t.Errorf("Check of a truncated file: %v", err)
	}
}

// Shards take every n-th position, write their own files, read the
// others', and wait for a value another shard saves.
func TestStoreShards(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig{N: 1}
	s1, s2 := open(t, dir, cfg, "", Shard{1, 2}), open(t, dir, cfg, "", Shard{2, 2})
	var mine []bool
	for range 4 {
		mine = append(mine, s2.Mine())
	}
	if mine[0] || !mine[1] || mine[2] || !mine[3] {
		t.Errorf("shard 2/2 takes %v of positions 0…3", mine)
	}
	done := make(chan error)
	go func() {
		var v int
		err := s2.AwaitValue(context.Background(), "v", &v, time.Millisecond, io.Discard)
		if err == nil && v != 7 {
			err = errors.New("wrong value")
		}
		done <- err
	}()
	if err := s1.SetValue("v", 7); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("AwaitValue: %v", err)
	}
	if err := s1.Put("a", testRow{"a", "1"}); err != nil {
		t.Fatal(err)
	}
	files, err := Files(dir, "work-quick")
	if err != nil || len(files) != 2 || filepath.Base(files[1]) != "work-quick.shard-1-of-2.json" {
		t.Errorf("files %v (%v), want the whole run's and shard 1's", files, err)
	}
	if whole := open(t, dir, cfg, "", Shard{}); whole.Len() != 1 {
		t.Errorf("the whole run reads %d rows, want shard 1's", whole.Len())
	}
	if err := s2.SetValue("v", 8); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Who: "test", Dir: dir, Stem: "work-quick", Config: cfg}); !errors.Is(err, ErrWork) {
		t.Errorf("two files that disagree on a value: %v, want ErrWork", err)
	}
}

func TestParseShard(t *testing.T) {
	for _, s := range []string{"1/2", "2/2", "64/64"} {
		if _, err := ParseShard(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "1", "0/2", "3/2", "1/0", "-1/2", "+1/2", "1/+2", " 1/2", "1/65", "a/b", "1/2/3"} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if sh, _ := ParseShard("2/3"); sh.File("s") != "s.shard-2-of-3.json" || (Shard{}).File("s") != "s.json" || !sh.Takes(4) || sh.Takes(3) {
		t.Errorf("shard 2/3: file %q, takes 4 %v, 3 %v", sh.File("s"), sh.Takes(4), sh.Takes(3))
	}
}

// Where names each machine and backend once, in order, whether given alone
// or in " and "-joined lists, and skips empty ones.
func TestWhereNamesEachOnce(t *testing.T) {
	if got := Where([]string{"a and b", "", "b", "c"}, []string{"x", "x and y"}); got != "a and b and c, x and y backend" {
		t.Errorf("Where: %q", got)
	}
	if got := Where([]string{""}, nil); got != "" {
		t.Errorf("Where of no machine: %q", got)
	}
}
