package main

import (
	"flag"
	"io"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/input"
)

// FuzzParseGMM: no --gmm JSON panics, in the parser or in building the
// mixture; whatever parses has K ≥ 1 finite means of one dimension,
// finite symmetric d×d covariances and finite non-negative weights.
func FuzzParseGMM(f *testing.F) {
	for _, s := range []string{
		`{"weights":[1,2],"means":[[0,0],[1,0]],"covs":[[[1,0],[0,1]],[[0.5,0.1],[0.1,0.5]]]}`,
		`{"means":[[0]],"covs":[[[1]]]}`, `{"means":[[0,0]],"covs":[[[1,0.2],[0.1,1]]]}`,
		`{"means":[[0,0]],"covs":[[[1,2],[2,1]]]}`, `{"weights":[-1],"means":[[0,0]],"covs":[[[1,0],[0,1]]]}`,
		`{"means":[[1e999,0]],"covs":[[[1,0],[0,1]]]}`, `{"means":[],"covs":[]}`, `{"means":[[]],"covs":[[]]}`,
		`{"means":[[0]],"covs":[[[1]]]} {}`, `[]`, `null`, `{"means":[[0]],"covs":[[[0]]],"weights":[0]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		g, err := input.ParseGMM(raw)
		if err != nil {
			return
		}
		k, d := g.Means.Dims()
		if k < 1 || d < 1 || len(g.Covs) != k || (g.Weights != nil && len(g.Weights) != k) {
			t.Fatalf("parsed %d means of dim %d, %d covariances, %d weights", k, d, len(g.Covs), len(g.Weights))
		}
		for _, v := range g.Means.RawMatrix().Data {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite mean %g", v)
			}
		}
		for _, c := range g.Covs {
			if c.SymmetricDim() != d {
				t.Fatalf("covariance of dim %d, want %d", c.SymmetricDim(), d)
			}
		}
		for _, w := range g.Weights {
			if !(w >= 0) || math.IsInf(w, 0) {
				t.Fatalf("weight %g", w)
			}
		}
		_, _ = mixture.NewGaussian(g.Means, g.Covs, g.Weights) // must not panic
	})
}

// FuzzParseTrace: no --trace value panics; whatever parses is a known
// estimator, with K ≥ 1 (≥ 3 for Hutch++) exactly when it takes one, and
// its String parses back to itself.
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{"vjp", "hutchinson:4", "hutchpp:3", "hutchpp:2", "dftm", "dftm-c", "df-tm-c", "Hutch++:9", "vjp:1", "hutchinson:", "hutchinson:-1", "hutchinson:99999999999999999999", " exact "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tr, err := parseTrace(v)
		if err != nil {
			return
		}
		if !slices.Contains([]string{"vjp-exact", "hutchinson", "hutch++", "df-tm", "df-tm-c", "skip-hutchinson"}, tr.Family) {
			t.Fatalf("%q parsed to unknown family %q", v, tr.Family)
		}
		if tr.random() != (tr.K >= 1) || (tr.Family == "hutch++" && tr.K < 3) {
			t.Fatalf("%q parsed to %+v", v, tr)
		}
		back, err := parseTrace(tr.String())
		if err != nil || back.Spec != tr.Spec {
			t.Fatalf("%q → %v → %+v, %v", v, tr, back, err)
		}
	})
}

// FuzzParseSampleFlags: no --window or --class value panics; a window that
// parses lies in [0, steps], and classes that parse are digits.
func FuzzParseSampleFlags(f *testing.F) {
	for _, s := range []string{"15:35", "0:0", "35:15", "-1:5", "a:b", ":", "15", " 3 : 4 ", "all", "3,11", "0,1,2", ",", ""} {
		f.Add(s, 50)
	}
	f.Fuzz(func(t *testing.T, v string, steps int) {
		if from, to, err := parseWindow(v, steps); err == nil && (from < 0 || from > to || to > steps) {
			t.Fatalf("--window %q with %d steps parsed to %d:%d", v, steps, from, to)
		}
		if cls, err := parseClasses(v); err == nil {
			if len(cls) == 0 {
				t.Fatalf("--class %q parsed to no class", v)
			}
			for _, k := range cls {
				if k < 0 || k > 9 {
					t.Fatalf("--class %q parsed to %d", v, k)
				}
			}
		}
	})
}

// FuzzScheduleFlags: no schedule name and parameter value panics; a
// schedule that builds has a finite time interval on whose ends its
// coefficients are finite.
func FuzzScheduleFlags(f *testing.F) {
	for _, c := range []struct {
		name, param string
		v           float64
	}{{"vp", "beta-max", 20}, {"ve", "sigma-max", 50}, {"ve", "sigma-min", 1e-300}, {"edm", "t-min", 0}, {"subvp", "beta-min", 1e300}, {"linear", "t-max", 0.5}, {"vp", "t-min", 0.9}, {"nope", "x", 1}} {
		f.Add(c.name, c.param, c.v)
	}
	f.Fuzz(func(t *testing.T, name, param string, v float64) {
		fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		build := scheduleFlags(fs, "")
		if err := fs.Parse([]string{"--schedule", name, "--" + param, strconv.FormatFloat(v, 'g', -1, 64)}); err != nil {
			return
		}
		s, err := build()
		if err != nil {
			return
		}
		lo, hi := s.Interval()
		if math.IsNaN(lo) || math.IsInf(hi, 0) || !(lo < hi) {
			t.Fatalf("%s %s=%g: interval [%g, %g]", name, param, v, lo, hi)
		}
		for _, at := range []float64{lo, hi} {
			c, err := schedule.At(s, at)
			if err != nil {
				continue
			}
			if math.IsNaN(c.Alpha) || math.IsNaN(c.Sigma) {
				t.Fatalf("%s %s=%g: coefficients at %g: %+v", name, param, v, at, c)
			}
		}
	})
}
