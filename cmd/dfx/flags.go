package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/membudget"
)

// parseFlags parses args with fs, which prints nothing itself. It returns
// (exit code, false) when the command must stop: 0 after -h (the usage is
// on stderr), 2 after a bad flag (one line on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer, cmd, usageLine string) (int, bool) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, usageLine)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 0, false
		}
		return fail(stderr, cmd, err), false
	}
	if fs.NArg() > 0 {
		return fail(stderr, cmd, fmt.Errorf("unexpected argument %q (flags start with -)", fs.Arg(0))), false
	}
	return 0, true
}

// isSet reports whether the flag name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// seedFlag is a uint64 flag whose error names its domain.
type seedFlag uint64

func (s *seedFlag) String() string { return strconv.FormatUint(uint64(*s), 10) }
func (s *seedFlag) Set(v string) error {
	u, err := strconv.ParseUint(v, 0, 64)
	if err != nil {
		return fmt.Errorf("want an integer in [0, 2^64−1]")
	}
	*s = seedFlag(u)
	return nil
}

// finite checks a float flag's value against (lo, ∞) or [lo, ∞).
func finite(name string, v, lo float64, inclusive bool) error {
	ok := !math.IsNaN(v) && !math.IsInf(v, 0) && (v > lo || inclusive && v == lo)
	if ok {
		return nil
	}
	dom := fmt.Sprintf("a finite number > %g", lo)
	if inclusive {
		dom = fmt.Sprintf("a finite number ≥ %g", lo)
	}
	return fmt.Errorf("--%s must be %s, got %g", name, dom, v)
}

// scheduleFlags registers the schedule flags; the returned function builds
// the schedule. A parameter given explicitly is used as given (never
// replaced by a default), must lie in its domain, and must belong to the
// chosen schedule.
func scheduleFlags(fs *flag.FlagSet, defaultName string) func() (schedule.Schedule, error) {
	name := fs.String("schedule", defaultName, "noise schedule: "+strings.Join(schedule.Names, "|"))
	params := []struct {
		flag, usage string
		v           *float64
		min         float64
		inclusive   bool
	}{
		{schedule.ParamSigmaMin, "VE σ_min (default 0.01)", new(float64), 0, false},
		{schedule.ParamSigmaMax, "VE σ_max (default 50)", new(float64), 0, false},
		{schedule.ParamBetaMin, "VP/sub-VP β_min (default 0.1)", new(float64), 0, false},
		{schedule.ParamBetaMax, "VP/sub-VP β_max (default 20)", new(float64), 0, false},
		{schedule.ParamTMin, "the schedule's smallest time (default: the schedule's)", new(float64), 0, true},
		{schedule.ParamTMax, "the schedule's largest time (default: the schedule's)", new(float64), 0, false},
	}
	for _, p := range params {
		fs.Float64Var(p.v, p.flag, 0, p.usage)
	}
	return func() (schedule.Schedule, error) {
		n := strings.ToLower(*name)
		if n == "sub-vp" {
			n = "subvp"
		}
		if n == "rf" {
			n = "linear"
		}
		if n == "" {
			return nil, fmt.Errorf("--schedule is required (%s)", strings.Join(schedule.Names, "|"))
		}
		if _, err := schedule.New(n, nil); err != nil {
			return nil, fmt.Errorf("unknown --schedule %q (want one of %s)", *name, strings.Join(schedule.Names, ", "))
		}
		set := map[string]float64{}
		for _, p := range params {
			if !isSet(fs, p.flag) {
				continue
			}
			if !schedule.Takes(n, p.flag) {
				return nil, fmt.Errorf("--%s applies to the %s schedule, not %q: the %s schedule would ignore it", p.flag, strings.Join(schedule.Takers(p.flag), "/"), n, n)
			}
			if err := finite(p.flag, *p.v, p.min, p.inclusive); err != nil {
				return nil, err
			}
			set[p.flag] = *p.v
		}
		s, err := schedule.New(n, set)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}

// memoryFlag registers --max-memory; the returned function gives the budget.
func memoryFlag(fs *flag.FlagSet) func() (membudget.Budget, error) {
	v := fs.String("max-memory", "auto", "refuse requests whose estimated memory exceeds this (e.g. 4G; auto: 90% of MemAvailable)")
	return func() (membudget.Budget, error) { return membudget.FromFlag(*v) }
}
