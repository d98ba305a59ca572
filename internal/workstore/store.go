package workstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/internal/atomicfile"
)

// Options say which work a Store keeps.
type Options struct {
	Who  string // the experiment, prefixing messages ("mnist-density")
	Dir  string // the work folder ("": nothing kept, nothing read)
	Stem string // the files' stem (Shard.File)
	// Config is what the rows are made for, kept as JSON and compared by
	// its digest (leave the folders out of it: json:"-"); Networks names
	// the networks (e.g. their digests; "" for none).
	Config   any
	Networks string
	Shard    Shard
	Backend  string // this run's backend, recorded at its first save
	// Row, if not nil, checks a row as it is read and returns its key;
	// Value likewise checks a named value.
	Row   func(raw json.RawMessage) (key string, err error)
	Value func(name string, raw json.RawMessage) error
}

// file is one work file.
type file struct {
	Digest   string                     `json:"digest"`   // of Settings
	Settings json.RawMessage            `json:"settings"` // the configuration, as JSON
	Networks string                     `json:"networks"`
	Values   map[string]json.RawMessage `json:"values"`
	Rows     []row                      `json:"rows"`
	Machine  string                     `json:"machine"` // " and "-joined
	Backend  string                     `json:"backend"`
	Seconds  float64                    `json:"seconds"` // computing time that wrote the file
}

type row struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// Store is one run's view of a work folder: the rows and values of every
// file of its stem, and its own file, rewritten after each new row.
type Store struct {
	opt      Options
	own      file
	rows     map[string]json.RawMessage
	values   map[string]json.RawMessage // the other files' values
	start    time.Time
	base     float64 // seconds in this run's own file
	added    bool    // this run's machine is in its file
	others   float64 // seconds of the other files
	machines []string
	backends []string
	pos      int
}

// Digest is the hex SHA-256 of v's JSON.
func Digest(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// Open reads the work files of opt.Stem in opt.Dir (a fresh store when
// there are none or Dir is ""): this run's own file and every other one,
// whose rows and values are read too. A file made for another Config or
// other Networks, a malformed one, a row twice in a file, or a value two
// files disagree on, is an ErrWork.
func Open(opt Options) (*Store, error) {
	if err := opt.Shard.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", opt.Who, err)
	}
	settings, err := json.Marshal(opt.Config)
	if err != nil {
		return nil, err
	}
	digest, err := Digest(opt.Config)
	if err != nil {
		return nil, err
	}
	s := &Store{opt: opt, rows: map[string]json.RawMessage{}, values: map[string]json.RawMessage{}, start: time.Now(),
		own: file{Digest: digest, Settings: settings, Networks: opt.Networks, Values: map[string]json.RawMessage{}}}
	if opt.Dir == "" {
		return s, nil
	}
	all, err := Files(opt.Dir, opt.Stem)
	if err != nil {
		return nil, err
	}
	own := filepath.Join(opt.Dir, opt.Shard.File(opt.Stem))
	files := []string{own} // first: its rows are the ones this run writes back
	for _, f := range all {
		if f != own {
			files = append(files, f)
		}
	}
	for i, path := range files {
		got, found, err := s.read(path, digest)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		if i == 0 {
			s.own, s.base = *got, got.Seconds
		} else if err := s.addOther(path, got); err != nil {
			return nil, err
		}
		for _, r := range got.Rows {
			if _, seen := s.rows[r.Key]; !seen {
				s.rows[r.Key] = r.Value
			}
		}
	}
	return s, nil
}

// addOther counts another file's seconds, machines and values.
func (s *Store) addOther(path string, got *file) error {
	s.others += got.Seconds
	s.machines = appendNew(s.machines, got.Machine)
	s.backends = appendNew(s.backends, got.Backend)
	for name, v := range got.Values {
		prev, ok := s.own.Values[name]
		if !ok {
			prev, ok = s.values[name]
		}
		if ok && !sameJSON(prev, v) {
			return fmt.Errorf("%s: %s: its value %s differs from another file's of %s: the rows of one report must share it "+
				"(let shard 1 compute it before the others start, or remove the file): %w", s.opt.Who, path, name, s.opt.Dir, ErrWork)
		}
		if _, ok := s.values[name]; !ok {
			s.values[name] = v
		}
	}
	return nil
}

func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// read reads one work file strictly: its configuration and networks must
// be the run's, its rows and values well formed, no row twice.
func (s *Store) read(path, digest string) (*file, bool, error) {
	var got file
	found, err := ReadStrict(s.opt.Who, path, &got)
	if err != nil || !found {
		return nil, found, err
	}
	who := s.opt.Who
	if got.Networks != s.opt.Networks {
		return nil, true, fmt.Errorf("%s: %s was made with other networks (%s; this run: %s) (remove it, or use another work folder): %w",
			who, path, got.Networks, s.opt.Networks, ErrWork)
	}
	if got.Digest != digest {
		return nil, true, fmt.Errorf("%s: %s was made with other settings (%s; this run: %s) (remove it, or use another work folder): %w",
			who, path, got.Settings, s.own.Settings, ErrWork)
	}
	if got.Values == nil {
		got.Values = map[string]json.RawMessage{}
	}
	for name, v := range got.Values {
		if err := s.checkValue(name, v); err != nil {
			return nil, true, fmt.Errorf("%s: %s: %w", who, path, err)
		}
	}
	seen := map[string]bool{}
	for _, r := range got.Rows {
		if s.opt.Row != nil {
			key, err := s.opt.Row(r.Value)
			if err != nil {
				return nil, true, fmt.Errorf("%s: %s: %v: %w", who, path, err, ErrWork)
			}
			if key != r.Key {
				return nil, true, fmt.Errorf("%s: %s: row %s filed as %s: %w", who, path, key, r.Key, ErrWork)
			}
		}
		if seen[r.Key] {
			return nil, true, fmt.Errorf("%s: %s: row %s twice: %w", who, path, r.Key, ErrWork)
		}
		seen[r.Key] = true
	}
	if got.Seconds < 0 || math.IsNaN(got.Seconds) || math.IsInf(got.Seconds, 0) {
		return nil, true, fmt.Errorf("%s: %s: %g seconds: %w", who, path, got.Seconds, ErrWork)
	}
	return &got, true, nil
}

func (s *Store) checkValue(name string, v json.RawMessage) error {
	if len(v) == 0 || string(v) == "null" {
		return fmt.Errorf("%s is null: %w", name, ErrWork)
	}
	if s.opt.Value != nil {
		if err := s.opt.Value(name, v); err != nil {
			return fmt.Errorf("%s %v: %w", name, err, ErrWork)
		}
	}
	return nil
}

// Mine reports whether the next row in the experiment's order is this
// run's to compute (its shard's), and counts it.
func (s *Store) Mine() bool {
	p := s.pos
	s.pos++
	return s.opt.Shard.Takes(p)
}

// Len is the number of rows found or kept.
func (s *Store) Len() int { return len(s.rows) }

// Get decodes the row key into v; found is false when no file has it.
func (s *Store) Get(key string, v any) (found bool, err error) {
	raw, ok := s.rows[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// Put keeps the row key (v as JSON) and saves this run's file.
func (s *Store) Put(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.rows[key] = raw
	if s.opt.Dir == "" {
		return nil
	}
	s.own.Rows = append(s.own.Rows, row{Key: key, Value: raw})
	return s.save()
}

// Value decodes the named value into v; found is false when no file has
// it.
func (s *Store) Value(name string, v any) (found bool, err error) {
	raw, ok := s.own.Values[name]
	if !ok {
		raw, ok = s.values[name]
	}
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

// SetValue keeps the named value and saves this run's file.
func (s *Store) SetValue(name string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.own.Values[name] = raw
	return s.save()
}

// AwaitValue waits until another file of the folder holds the named value
// (a shard after the first waits for what shard 1 computes, so that every
// shard uses the same), reading the files every poll, and decodes it into
// v.
func (s *Store) AwaitValue(ctx context.Context, name string, v any, poll time.Duration, log io.Writer) error {
	told := false
	for {
		files, err := Files(s.opt.Dir, s.opt.Stem)
		if err != nil {
			return err
		}
		for _, path := range files {
			if filepath.Base(path) == s.opt.Shard.File(s.opt.Stem) {
				continue
			}
			got, found, err := s.read(path, s.own.Digest)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			if raw, ok := got.Values[name]; ok {
				s.values[name] = raw
				return json.Unmarshal(raw, v)
			}
		}
		if !told {
			fmt.Fprintf(log, "%s: shard %s waits for shard 1 to save %s in %s\n", s.opt.Who, s.opt.Shard, name, s.opt.Dir)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// Elapsed is the computing time of this run and the earlier ones, in every
// file of the folder.
func (s *Store) Elapsed() time.Duration {
	return time.Duration((s.base+s.others)*float64(time.Second)) + time.Since(s.start)
}

// WorkTime is the computing time that made the folder's rows and values:
// the earlier runs' and, when this run kept something, this run's so far
// (a run that only reads them adds nothing).
func (s *Store) WorkTime() time.Duration {
	if !s.added {
		return time.Duration(s.ReadSeconds() * float64(time.Second))
	}
	return s.Elapsed()
}

// ReadSeconds is the computing time of the earlier runs, in every file.
func (s *Store) ReadSeconds() float64 { return s.base + s.others }

// Where is the machines and backends that computed the kept work, in every
// file of the folder ("" when none did yet).
func (s *Store) Where() string { return Where(s.Machines()) }

// Machines lists the machines and the backends that computed the kept
// work, in every file of the folder, each once.
func (s *Store) Machines() (machines, backends []string) {
	machines = appendNew(appendNew(nil, s.own.Machine), strings.Join(s.machines, " and "))
	backends = appendNew(appendNew(nil, s.own.Backend), strings.Join(s.backends, " and "))
	return machines, backends
}

// Where says where work was computed, "m1 and m2, b1 and b2 backend" ("" for
// no machine), from lists whose items may be " and "-joined lists or "";
// an item given twice is named once.
func Where(machines, backends []string) string {
	machines, backends = appendAll(nil, machines), appendAll(nil, backends)
	if len(machines) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, %s backend", strings.Join(machines, " and "), strings.Join(backends, " and "))
}

// appendAll adds the items of every " and "-joined list of lists to list,
// each once.
func appendAll(list, lists []string) []string {
	for _, l := range lists {
		list = appendNew(list, l)
	}
	return list
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

func (s *Store) save() error {
	if s.opt.Dir == "" {
		return nil
	}
	if !s.added {
		s.added = true
		add := func(list *string, v string) {
			switch {
			case *list == "":
				*list = v
			case !slices.Contains(strings.Split(*list, " and "), v):
				*list += " and " + v
			}
		}
		add(&s.own.Machine, Machine())
		add(&s.own.Backend, s.opt.Backend)
	}
	s.own.Seconds = (time.Duration(s.base*float64(time.Second)) + time.Since(s.start)).Seconds()
	raw, err := json.Marshal(s.own)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.opt.Dir, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(s.opt.Dir, s.opt.Shard.File(s.opt.Stem)), raw)
}

// Check reads every work file of the stems in dir strictly (a malformed
// one is reported before any work; whether one matches the run is checked
// when Open knows its networks).
func Check(who, dir string, stems ...string) error {
	if dir == "" {
		return nil
	}
	if err := CheckDir(who, dir); err != nil {
		return err
	}
	for _, stem := range stems {
		files, err := Files(dir, stem)
		if err != nil {
			return err
		}
		for _, f := range files {
			if _, err := ReadStrict(who, f, &file{}); err != nil {
				return err
			}
		}
	}
	return nil
}
