package checkpoint

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// A Set is the networks of several weights checkpoints put side by side in
// one store: an ε-network in one file (e.g. written by dfx import) and the
// t_θ or ν_θ trained for it in another (dfx train dftm -eps). Messages name
// the files; callers prefix them with their flag.
type Set struct {
	Store *model.Store
	File  map[string]string      // network scope → the file that holds it
	Of    map[string]*Checkpoint // network scope → its checkpoint
	paths []string
}

// ReadSet reads weights checkpoints of networks for points of dimension d
// trained on schedule s: one architecture, each network once.
func ReadSet(paths []string, d int, s schedule.Schedule) (*Set, error) {
	set := &Set{File: map[string]string{}, Of: map[string]*Checkpoint{}, paths: paths}
	var first *Checkpoint
	var others []*model.Store
	for _, p := range paths {
		c, err := Read(p)
		if err != nil {
			return nil, err
		}
		if c.Header.Kind != KindWeights {
			return nil, invalid("%s is a %q checkpoint; want %q checkpoints (the evaluation weights)", p, c.Header.Kind, KindWeights)
		}
		if c.Header.Dim != d {
			return nil, invalid("%s takes points of dimension %d, the data are of dimension %d", p, c.Header.Dim, d)
		}
		if err := CheckSchedule(c, s); err != nil {
			return nil, fmt.Errorf("%s does not go with the %s schedule: %w", p, s.Name(), err)
		}
		for _, n := range c.Header.Networks {
			if f, dup := set.File[n]; dup {
				return nil, invalid("%s and %s both hold the %s network: give each network once", f, p, n)
			}
			set.File[n], set.Of[n] = p, c
		}
		if first != nil {
			if err := sameArchitecture(first, c, paths[0], p); err != nil {
				return nil, err
			}
		}
		st, err := LoadWeights(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if set.Store == nil {
			set.Store, first = st, c
		} else {
			others = append(others, st)
		}
	}
	if set.Store == nil {
		return nil, invalid("no checkpoint given")
	}
	if err := models.CopyTrainable(set.Store, others...); err != nil {
		return nil, fmt.Errorf("combining the files: %w", err)
	}
	return set, nil
}

// sameArchitecture checks that the checkpoints a (from file pa) and b
// (file pb) agree on every setting but training-only ones and those of a
// network that only one of them holds.
func sameArchitecture(a, b *Checkpoint, pa, pb string) error {
	keys := slices.Sorted(maps.Keys(a.Header.Params))
	for k := range b.Header.Params {
		if _, dup := a.Header.Params[k]; !dup {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		if ownSetting(key, a, b) || TrainingOnlyParams[key] || InitOnlyParams[key] {
			continue
		}
		if va, vb := a.Header.Params[key], b.Header.Params[key]; va != vb {
			return invalid("%s has %s=%q but %s has %q: networks of different architectures cannot be combined", pb, key, vb, pa, va)
		}
	}
	return nil
}

// ownSetting reports whether key is scoped to a network that only one of
// the two checkpoints holds (e.g. /dftm/trace_skip): a setting of that
// network alone, which the other file need not share.
func ownSetting(key string, a, b *Checkpoint) bool {
	parts := strings.SplitN(strings.TrimPrefix(key, "/"), "/", 2)
	if len(parts) != 2 {
		return false
	}
	return slices.Contains(a.Header.Networks, parts[0]) != slices.Contains(b.Header.Networks, parts[0])
}

// Networks lists the network scopes the set holds, sorted.
func (s *Set) Networks() []string { return slices.Sorted(maps.Keys(s.File)) }

// Use checks the set for a run on its score network and, if need is not
// "", the trace network of that scope (models.TraceScope or
// CentredTraceScope; what asks for it is named by usedBy in messages, e.g.
// "--trace dftm"): the score network is there, every trace network was
// made for it, need is there, and every file holds something the run uses
// (a file loaded and not used is a mistake, not a no-op).
func (s *Set) Use(need, usedBy string) error {
	held := strings.Join(s.Networks(), ", ")
	if _, ok := s.File[models.ScoreScope]; !ok {
		return invalid("no score network (%s) in the checkpoints, which hold %s", models.ScoreScope, held)
	}
	for _, n := range []string{models.TraceScope, models.CentredTraceScope} {
		if c, ok := s.Of[n]; ok {
			if err := CheckPair(s.Of[models.ScoreScope], c); err != nil {
				return fmt.Errorf("%s was not made for the score network of %s: %w", s.File[n], s.File[models.ScoreScope], err)
			}
		}
	}
	if _, ok := s.File[need]; need != "" && !ok {
		return invalid("%s needs the %s network in a checkpoint (add the file that holds it, e.g. the one "+
			"dfx train wrote for this score network); the files hold %s", usedBy, need, held)
	}
	for _, p := range s.paths {
		used := false
		var holds []string
		for n, f := range s.File {
			if f == p {
				used = used || n == models.ScoreScope || n == need
				holds = append(holds, n)
			}
		}
		if !used {
			slices.Sort(holds)
			return invalid("%s holds %s, which %s does not use: leave it out", p, strings.Join(holds, ", "), usedBy)
		}
	}
	return nil
}

// invalid is an error about the set's files, wrapping ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalid)
}
