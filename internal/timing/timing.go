// Package timing times several pieces of work against each other: each
// case once to warm up (compile its graphs), then round by round, every
// case once per round, so that a drift of the machine (another process, a
// thermal limit) spreads over all cases instead of biasing the one that
// ran last. Cases report their own measurements, one or more values per
// call (Wall gives a call's wall time).
package timing

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/dfx-lab/dfx/internal/stats"
	"gonum.org/v1/gonum/stat"
)

// Case is one named piece of work to time.
type Case struct {
	Name string
	// Rounds caps how many rounds time this case (the first Rounds; 0: all).
	Rounds int
	// Run does the work once and returns what the call measured: one value
	// per metric, the same number every call (Wall: its wall time in s).
	Run func() ([]float64, error)
}

// Wall is a Case.Run that measures f's wall time, in seconds.
func Wall(f func() error) func() ([]float64, error) {
	return func() ([]float64, error) {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		return []float64{time.Since(start).Seconds()}, nil
	}
}

// Samples are one case's measurements: Values[m][r] is metric m in the
// case's r-th timed round.
type Samples struct {
	Name   string
	Values [][]float64
}

// Rounds is the number of timed rounds of the case.
func (s Samples) Rounds() int {
	if len(s.Values) == 0 {
		return 0
	}
	return len(s.Values[0])
}

// Median is the median of metric m over the rounds: the middle value, or
// the mean of the two middle values for an even number of rounds (0 with
// no rounds).
func (s Samples) Median(m int) float64 {
	if m >= len(s.Values) {
		return 0
	}
	return Median(s.Values[m])
}

// Quantile is the p-quantile of metric m over the rounds (the empirical
// quantile of stat.Quantile; NaN with no rounds).
func (s Samples) Quantile(p float64, m int) float64 {
	if m >= len(s.Values) || len(s.Values[m]) == 0 {
		return math.NaN()
	}
	v := slices.Clone(s.Values[m])
	slices.Sort(v)
	return stat.Quantile(p, stat.Empirical, v, nil)
}

// Median is the median of v: the middle value, or the mean of the two
// middle values when len(v) is even; 0 for an empty v.
func Median(v []float64) float64 { return stats.Median(v) }

// Interleaved calls every case once to warm up (the measurement is
// dropped), then rounds times in turn, case after case, each case only in
// its first Rounds rounds. It stops with ctx's error before a call once
// ctx is done; a case's error is returned with its name.
func Interleaved(ctx context.Context, rounds int, cases []Case) ([]Samples, error) {
	out := make([]Samples, len(cases))
	for i, c := range cases {
		out[i].Name = c.Name
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := c.Run(); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	for r := range rounds {
		for i, c := range cases {
			if c.Rounds > 0 && r >= c.Rounds {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			v, err := c.Run()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Name, err)
			}
			if out[i].Values == nil {
				out[i].Values = make([][]float64, len(v))
			}
			if len(v) != len(out[i].Values) {
				return nil, fmt.Errorf("%s: %d values in round %d, %d before", c.Name, len(v), r, len(out[i].Values))
			}
			for m, x := range v {
				out[i].Values[m] = append(out[i].Values[m], x)
			}
		}
	}
	return out, nil
}

// Machine describes this computer in a few words, for a table of times.
func Machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs", runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
}
