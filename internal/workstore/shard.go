package workstore

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Shard is shard K of N: a run that computes only the rows whose position
// in the experiment's order is K−1 modulo N. The zero Shard is the whole
// run.
type Shard struct{ K, N int }

// ParseShard reads "k/n" (1 ≤ k ≤ n ≤ 64), both plain decimal digits (no
// sign, space or base prefix).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	digits := func(v string) bool { return v != "" && strings.Trim(v, "0123456789") == "" }
	ok = ok && digits(a) && digits(b)
	var k, n int
	var err error
	if ok {
		k, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || k < 1 || n < 1 || k > n || n > 64 {
		return Shard{}, fmt.Errorf("shard %q: want k/n with 1 ≤ k ≤ n ≤ 64, e.g. 1/2", s)
	}
	return Shard{k, n}, nil
}

// ShardOf is the shard "k/n" names: the whole run when s is "" or
// malformed (an experiment's checks refuse the latter with ParseShard).
func ShardOf(s string) Shard {
	sh, _ := ParseShard(s)
	return sh
}

// ShardFile is the work file of stem a run of shard s ("k/n") keeps its
// rows in, and whether s names a shard ("": the whole run).
func ShardFile(s, stem string) (string, bool) {
	if s == "" {
		return "", false
	}
	return ShardOf(s).File(stem), true
}

// ShardFlag defines the flag -shard of fs, setting *dst to a well-formed
// "k/n"; usage says what the experiment's shard computes.
func ShardFlag(fs *flag.FlagSet, dst *string, usage string) {
	fs.Func("shard", usage, func(v string) error {
		if _, err := ParseShard(v); err != nil {
			return err
		}
		*dst = v
		return nil
	})
}

// Whole reports whether s is the whole run (no shard).
func (s Shard) Whole() bool { return s.N == 0 }

// String is "k/n" ("" for the whole run).
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Check reports a shard outside 1 ≤ K ≤ N (the whole run is valid).
func (s Shard) Check() error {
	if s.N < 0 || (s.N > 0 && (s.K < 1 || s.K > s.N)) {
		return fmt.Errorf("shard %d of %d: want 1 ≤ shard ≤ shards", s.K, s.N)
	}
	return nil
}

// Takes reports whether the row at position pos (0-based) is the shard's.
func (s Shard) Takes(pos int) bool { return s.Whole() || pos%s.N == s.K-1 }

// File is the work file of stem for shard s: stem.json for the whole run,
// stem.shard-k-of-n.json for a shard.
func (s Shard) File(stem string) string {
	if s.Whole() {
		return stem + ".json"
	}
	return fmt.Sprintf("%s.shard-%d-of-%d.json", stem, s.K, s.N)
}

// Files lists the work files of stem in dir: the whole run's first (whether
// or not it exists), then the shards' that exist, by n and then k.
func Files(dir, stem string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var shards []Shard
	prefix := stem + ".shard-"
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		var s Shard
		if _, err := fmt.Sscanf(rest, "%d-of-%d.json", &s.K, &s.N); err != nil || e.Name() != s.File(stem) {
			continue
		}
		shards = append(shards, s)
	}
	slices.SortFunc(shards, func(a, b Shard) int {
		if a.N != b.N {
			return a.N - b.N
		}
		return a.K - b.K
	})
	files := []string{filepath.Join(dir, Shard{}.File(stem))}
	for _, s := range shards {
		files = append(files, filepath.Join(dir, s.File(stem)))
	}
	return files, nil
}
