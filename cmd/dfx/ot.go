package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/progress"
	"github.com/dfx-lab/dfx/ot"
	"gonum.org/v1/gonum/mat"
)

// otPresets are the named data sets of `dfx ot --preset`.
var otPresets = []string{"paper-gaussian", "paper-affine", "paper-nonaffine", "published-affine", "published-nonaffine"}

const otUsage = "usage: dfx ot (--preset NAME | --data Y.csv | --gaussian MEAN,COV) [--schedule vp] [--steps 100] [--chains 256] [flags]"

// runOT is `dfx ot`: one OT test of the PF-ODE map, per-chain and summary
// figures as text or JSON. Exit 0 on success, 2 on bad input, 1 when the
// computation fails or is interrupted.
func runOT(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx ot", flag.ContinueOnError)
	var (
		schedName = fs.String("schedule", "vp", "noise schedule: ve, vp, subvp, edm, linear")
		protocol  = fs.String("protocol", "paper", "paper (continuous schedule) or published (the published script's DDPM table and DDIM grid)")
		dataPath  = fs.String("data", "", "data points, one per row: CSV or .npy; - for stdin")
		header    = fs.Bool("header", false, "skip the first line of the --data CSV")
		gauss     = fs.String("gaussian", "", "single Gaussian: MEAN,COV as d + d² numbers (mean, then row-major covariance), e.g. 0.5,0.5,0.05,0.02,0.02,0.03")
		preset    = fs.String("preset", "", "named data: "+strings.Join(otPresets, ", "))
		s         = fs.Float64("s", 0, "end time of the map x_T ↦ x_s, in [t_min, T) (default: the schedule's t_min; published: 0)")
		steps     = fs.Int("steps", 100, "number of steps M ≥ 1 (published: at most 999)")
		gridKind  = fs.String("grid", "uniform", "time grid of the paper protocol: uniform, logsigma, karras")
		solverF   = fs.String("solver", "euler", "solver: euler, ddim, heun, rk4")
		matrix    = fs.String("matrix", "jacobian", "matrices carried, comma-separated: jacobian, paper, published")
		chains    = fs.Int("chains", ot.DefaultChains, "number of chains ≥ 1")
		seed      seedFlag
		prior     = fs.Float64("prior-std", 0, "std > 0 of x_T (default: σ(T) for the paper protocol, 1 for the published one)")
		tol       = fs.Float64("tol", ot.DefaultTol, "asymmetry tolerance > 0 of the OT verdict")
		quiet     = fs.Bool("summary-only", false, "print the summary only, not one line per chain")
		asJSON    = fs.Bool("json", false, "print JSON instead of text")
		budget    = memoryFlag(fs)
	)
	seed = 1
	fs.Var(&seed, "seed", "seed of the starting states, an integer in [0, 2^64−1]")
	if code, ok := parseFlags(fs, args, stderr, "ot", otUsage); !ok {
		return code
	}
	bad := func(err error) int { return fail(stderr, "ot", err) }
	if err := checkOTNumbers(fs, *chains, *steps, *tol, *prior, *s); err != nil {
		return bad(err)
	}
	if *dataPath == "" && *header {
		return bad(errors.New("--header applies to --data only"))
	}
	sol, err := ot.ParseSolver(*solverF)
	if err != nil {
		return bad(err)
	}
	if err := checkPublishedSolver(*protocol, *solverF, sol); err != nil {
		return bad(err)
	}
	rules, err := parseRules(*matrix)
	if err != nil {
		return bad(err)
	}
	mem, err := budget()
	if err != nil {
		return bad(err)
	}
	data, err := otData(*dataPath, *gauss, *preset, input.Options{Header: *header, MaxBytes: mem.Bytes})
	if err != nil {
		return bad(err)
	}
	need := otBytes(*chains, *steps, data.Dim(), len(rules), !*quiet, *asJSON)
	if err := mem.Check(fmt.Sprintf("%d chains × %d steps in dimension %d", *chains, *steps, data.Dim()), need,
		"run fewer --chains at a time (several --seed values give independent chains) or fewer --steps"); err != nil {
		return bad(err)
	}
	path, grid, err := otPath(fs, *protocol, *schedName, *gridKind, *s, *steps, prior)
	if err != nil {
		return bad(err)
	}
	meter := progress.New(stderr, "dfx ot", "steps", len(grid)-1)
	meter.Delay = time.Second
	out, err := ot.Test(ctx, ot.Spec{Data: data, Schedule: path, Grid: grid, Solver: sol, Rules: rules,
		Chains: *chains, Seed: uint64(seed), PriorStd: *prior, Tol: *tol,
		Observe: func(i int, _ float64, _ *mat.Dense, _ [][]float64) { meter.Set(i, strconv.Itoa(*chains)+" chains") }})
	meter.Done()
	if err != nil {
		return failRun(stderr, "ot", err)
	}
	if err := writeOT(stdout, out, *asJSON, !*quiet, path.Name(), grid, sol); err != nil {
		return failRun(stderr, "ot", err)
	}
	return 0
}

// writeOT prints the outcome as JSON or text (per chain too when perChain),
// in one write once it is complete.
func writeOT(stdout io.Writer, out *ot.Outcome, asJSON, perChain bool, schedName string, grid []float64, sol ot.Solver) error {
	var buf strings.Builder
	var err error
	if asJSON {
		err = writeJSON(&buf, out, perChain, grid)
	} else {
		err = writeText(&buf, out, perChain, schedName, grid, sol)
	}
	if err == nil {
		_, err = io.WriteString(stdout, buf.String())
	}
	return err
}

// otBytes estimates the peak memory of an OT test: per chain the state and
// its Jacobian (d + d²) times the solver's stages and copies, the Fisher of
// every chain, each rule's matrix and its copy in the outcome, the printed
// line; and the time grid (built, checked, and printed in the JSON).
func otBytes(chains, steps, d, rules int, perChain, asJSON bool) float64 {
	k, dd := float64(chains), float64(d)
	perState := 8 * (dd + dd*dd) * 8 // RK4 stages, work and the state itself
	per := perState + 8*dd*dd*(1+2*float64(rules)) + 16*dd + 300*float64(rules)
	if perChain {
		per += 150*float64(rules) + 40*dd*dd*float64(rules)
	}
	perStep := 16.0
	if asJSON {
		perStep += 24
	}
	return k*per + perStep*float64(steps+1)
}

func otData(dataPath, gauss, preset string, opt input.Options) (mixture.Mixture, error) {
	n := 0
	for _, v := range []string{dataPath, gauss, preset} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("give exactly one of --data, --gaussian, --preset")
	}
	switch {
	case dataPath != "":
		y, err := input.ReadFile(dataPath, opt)
		if err != nil {
			return nil, err
		}
		return mixture.NewDirac(y, nil)
	case gauss != "":
		return parseGaussian(gauss)
	}
	paper, err := ot.PaperCases()
	if err != nil {
		return nil, err
	}
	pub, err := ot.PublishedCases()
	if err != nil {
		return nil, err
	}
	switch preset {
	case "paper-gaussian", "published-gaussian":
		return paper[0].Data, nil
	case "paper-affine":
		return paper[1].Data, nil
	case "paper-nonaffine":
		return paper[2].Data, nil
	case "published-affine":
		return pub[1].Data, nil
	case "published-nonaffine":
		return pub[2].Data, nil
	}
	return nil, fmt.Errorf("unknown preset %q (%s)", preset, strings.Join(otPresets, ", "))
}

func parseFloats(s string) ([]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	out := make([]float64, len(fields))
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite number", f)
		}
		out[i] = v
	}
	return out, nil
}

// parseGaussian reads d + d² numbers: the mean, then the covariance row-major.
func parseGaussian(s string) (mixture.Mixture, error) {
	v, err := parseFloats(s)
	if err != nil {
		return nil, fmt.Errorf("--gaussian: %w", err)
	}
	d := int(math.Round((-1 + math.Sqrt(1+4*float64(len(v)))) / 2))
	if d < 1 || d+d*d != len(v) {
		return nil, fmt.Errorf("--gaussian: %d numbers; want d + d² (mean, then the d×d covariance)", len(v))
	}
	cov := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			a, b := v[d+i*d+j], v[d+j*d+i]
			if math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(a)) {
				return nil, fmt.Errorf("--gaussian: covariance is not symmetric at (%d,%d)", i, j)
			}
			cov.SetSym(i, j, a)
		}
	}
	return ot.SingleGaussian(v[:d], cov)
}

// parseRules reads --matrix: matrix rules, comma-separated.
func parseRules(matrix string) ([]ot.Rule, error) {
	var rules []ot.Rule
	for _, r := range strings.Split(matrix, ",") {
		switch rr := ot.Rule(strings.TrimSpace(strings.ToLower(r))); rr {
		case ot.Jacobian, ot.PaperRule, ot.PublishedRule:
			rules = append(rules, rr)
		default:
			return nil, fmt.Errorf("unknown --matrix %q (jacobian, paper, published)", r)
		}
	}
	return rules, nil
}

// checkOTNumbers checks dfx ot's numeric flags (--prior-std and --s only
// when given).
func checkOTNumbers(fs *flag.FlagSet, chains, steps int, tol, prior, s float64) error {
	if chains < 1 {
		return fmt.Errorf("--chains must be at least 1, got %d", chains)
	}
	if steps < 1 {
		return fmt.Errorf("--steps must be at least 1, got %d", steps)
	}
	if err := finite("tol", tol, 0, false); err != nil {
		return err
	}
	if isSet(fs, "prior-std") {
		if err := finite("prior-std", prior, 0, false); err != nil {
			return fmt.Errorf("%w (omit it for the default)", err)
		}
	}
	if isSet(fs, "s") {
		if err := finite("s", s, 0, true); err != nil {
			return err
		}
	}
	return nil
}

// otPath is the coefficients' source and the time grid of a protocol:
// paper (a continuous schedule, a grid of --grid kind down to --s) or
// published (the script's DDPM table and DDIM timesteps; the prior's std
// becomes 1 unless --prior-std was given).
func otPath(fs *flag.FlagSet, protocol, schedName, gridKind string, s float64, steps int, prior *float64) (schedule.Source, []float64, error) {
	var path schedule.Source
	var grid []float64
	var err error
	switch protocol {
	case "paper":
		sc, err := schedule.ByName(schedName, schedule.Params{})
		if err != nil {
			return nil, nil, err
		}
		path = schedule.Continuous{Schedule: sc}
		lo, hi := sc.Interval()
		end := lo
		if isSet(fs, "s") {
			if !(s >= lo && s < hi) {
				return nil, nil, fmt.Errorf("--s %g is outside [t_min, T) = [%g, %g) of %s", s, lo, hi, schedName)
			}
			end = s
		}
		if grid, err = ot.Grid(path, gridKind, end, steps); err != nil {
			return nil, nil, err
		}
	case "published":
		if isSet(fs, "grid") {
			return nil, nil, fmt.Errorf("--grid %s: the published protocol uses its own DDIM timesteps and would ignore --grid", gridKind)
		}
		if path, err = ot.Published(schedName); err != nil {
			return nil, nil, err
		}
		if grid, err = ot.PublishedGrid(steps); err != nil {
			return nil, nil, err
		}
		if s > 0 {
			if !(s < grid[0]) {
				return nil, nil, fmt.Errorf("--s %g is outside [0, T) = [0, %g) of the published grid", s, grid[0])
			}
			if grid, err = ot.PublishedGridTo(grid, s); err != nil {
				return nil, nil, err
			}
		}
		if !isSet(fs, "prior-std") {
			*prior = 1
		}
	default:
		return nil, nil, fmt.Errorf("unknown --protocol %q (paper, published)", protocol)
	}
	return path, grid, nil
}

// checkPublishedSolver refuses, before any chain runs, a solver that
// evaluates between the grid's times under the published protocol, whose
// DDPM table is defined at its 1000 nodes only (the run would fail at its
// first intermediate stage).
func checkPublishedSolver(protocol, name string, sol ot.Solver) error {
	tb, ok := sol.(*pfode.Tableau)
	if protocol != "published" || !ok {
		return nil
	}
	for _, c := range tb.C {
		if c > 0 && c < 1 {
			return fmt.Errorf("--solver %s evaluates between the grid's times, where the published protocol's DDPM table "+
				"is not defined (only at its 1000 nodes): use euler, ddim or heun", name)
		}
	}
	return nil
}
