package ot

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// Presets are the named data sets of `dfx ot --preset`.
var Presets = []string{"paper-gaussian", "paper-affine", "paper-nonaffine", "published-affine", "published-nonaffine"}

// Main is `dfx ot`: it parses args (without the program and subcommand
// names), runs one OT test and prints per-chain and summary figures, as text
// or as JSON. It returns 0 on success, 2 on bad input (with one line on
// stderr) and 1 when the computation fails.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx ot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		sched    = fs.String("schedule", "vp", "noise schedule: ve, vp, subvp, edm, linear")
		protocol = fs.String("protocol", "paper", "paper (continuous schedule) or published (the published script's DDPM table and DDIM grid)")
		dataPath = fs.String("data", "", "CSV file of data points, one point per line (a non-numeric first line is a header)")
		gauss    = fs.String("gaussian", "", "single Gaussian: MEAN,COV as d + d² numbers (mean, then row-major covariance), e.g. 0.5,0.5,0.05,0.02,0.02,0.03")
		preset   = fs.String("preset", "", "named data: "+strings.Join(Presets, ", "))
		s        = fs.Float64("s", 0, "end time of the map x_T ↦ x_s (0: the schedule's TMin; published: t = 0)")
		steps    = fs.Int("steps", 100, "number of steps M (published: timesteps − 1, at most 999)")
		gridKind = fs.String("grid", "uniform", "time grid: uniform, logsigma, karras (paper protocol only)")
		solverF  = fs.String("solver", "euler", "solver: euler, ddim, heun, rk4")
		matrix   = fs.String("matrix", "jacobian", "matrices carried, comma-separated: jacobian, paper, published")
		chains   = fs.Int("chains", DefaultChains, "number of chains")
		seed     = fs.Uint64("seed", 1, "seed of the starting states")
		prior    = fs.Float64("prior-std", 0, "std of x_T (0: σ(T) for the paper protocol, 1 for the published one)")
		tol      = fs.Float64("tol", DefaultTol, "asymmetry tolerance of the OT verdict")
		quiet    = fs.Bool("summary-only", false, "print the summary only, not one line per chain")
		asJSON   = fs.Bool("json", false, "print JSON instead of text")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(err error) int {
		fmt.Fprintf(stderr, "dfx ot: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		return bad(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	data, err := cliData(*dataPath, *gauss, *preset)
	if err != nil {
		return bad(err)
	}
	sol, err := ParseSolver(*solverF)
	if err != nil {
		return bad(err)
	}
	var rules []Rule
	for _, r := range strings.Split(*matrix, ",") {
		switch rr := Rule(strings.TrimSpace(strings.ToLower(r))); rr {
		case Jacobian, PaperRule, PublishedRule:
			rules = append(rules, rr)
		default:
			return bad(fmt.Errorf("unknown matrix %q (jacobian, paper, published)", r))
		}
	}
	if *chains < 1 {
		return bad(fmt.Errorf("--chains must be at least 1, got %d", *chains))
	}
	if !(*tol > 0) {
		return bad(fmt.Errorf("--tol must be positive, got %g", *tol))
	}
	if *steps < 1 {
		return bad(fmt.Errorf("--steps must be at least 1, got %d", *steps))
	}
	var path schedule.Source
	var grid []float64
	switch *protocol {
	case "paper":
		sc, err := schedule.ByName(*sched, schedule.Params{})
		if err != nil {
			return bad(err)
		}
		path = schedule.Continuous{Schedule: sc}
		if grid, err = Grid(path, *gridKind, *s, *steps); err != nil {
			return bad(err)
		}
	case "published":
		if path, err = Published(*sched); err != nil {
			return bad(err)
		}
		if grid, err = PublishedGrid(*steps); err != nil {
			return bad(err)
		}
		if *s > 0 {
			if grid, err = publishedGridTo(grid, *s); err != nil {
				return bad(err)
			}
		}
		if *prior == 0 {
			*prior = 1
		}
	default:
		return bad(fmt.Errorf("unknown protocol %q (paper, published)", *protocol))
	}
	if math.IsNaN(*prior) || *prior < 0 {
		return bad(fmt.Errorf("--prior-std must be non-negative, got %g", *prior))
	}
	out, err := Test(context.Background(), Spec{Data: data, Schedule: path, Grid: grid, Solver: sol, Rules: rules,
		Chains: *chains, Seed: *seed, PriorStd: *prior, Tol: *tol})
	if err != nil {
		fmt.Fprintf(stderr, "dfx ot: %v\n", err)
		return 1
	}
	if *asJSON {
		err = writeJSON(stdout, out, !*quiet, grid)
	} else {
		err = writeText(stdout, out, !*quiet, path.Name(), grid, sol)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dfx ot: %v\n", err)
		return 1
	}
	return 0
}

func cliData(dataPath, gauss, preset string) (mixture.Mixture, error) {
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
		return readPoints(dataPath)
	case gauss != "":
		return parseGaussian(gauss)
	}
	paper, err := PaperCases()
	if err != nil {
		return nil, err
	}
	pub, err := PublishedCases()
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
	return nil, fmt.Errorf("unknown preset %q (%s)", preset, strings.Join(Presets, ", "))
}

func readPoints(path string) (mixture.Mixture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows [][]float64
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		txt := strings.TrimSpace(sc.Text())
		if txt == "" || strings.HasPrefix(txt, "#") {
			continue
		}
		row, err := parseFloats(txt)
		if err != nil {
			if len(rows) == 0 && line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no data points", path)
	}
	return Points(rows)
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
	return SingleGaussian(v[:d], cov)
}
