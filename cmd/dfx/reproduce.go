package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
)

// experiment computes one experiment (Quick or Full profile). One result
// is written into <out>/<experiment>; several (toys-others: one per data
// set) into <out>/<experiment>/<report name> each.
type experiment func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error)

// experiments is filled by the reproduce_*.go files.
var experiments = map[string]experiment{}

// notInAll are the experiments `all` leaves out: they read what a
// researcher's own runs left behind (mnist-candidates: training states).
var notInAll = map[string]bool{"mnist-candidates": true, "mnist-model": true, "mnist-ablation": true}

// experimentDocs describes each experiment for `dfx reproduce -h`.
var experimentDocs = map[string]string{
	"access":      "access comparison: exact vs VJP / Hutchinson / DF-TM / DF-EA traces and products, d = 64 and the plane",
	"fields":      "quick-start: exact trace and score fields of a 2-D mixture",
	"mnist":       "paper Table 1, Figures 1–2 on MNIST, and every estimator against the exact Fisher of the 60 000 training images (committed networks)",
	"ot":          "paper Table 3: OT test of PF-ODE maps in both protocols, studies beyond the paper, figures",
	"toys":        "paper Table 2 on the toy data set (full: committed checkpoints, trains what is missing)",
	"toys-others": "the Table 2 pipeline on every other toy data set",
}

// reproduceEnv lists the environment variables reproduce and the
// experiments read, for -h.
var reproduceEnv = [][2]string{
	{"DFX_QUICK=1", "makes -quick the default"},
	{"DFX_RETRAIN=1", "toys (1, 0 or unset): retrain instead of loading the committed checkpoints, and rewrite toys/checkpoints (run from the repository root)"},
	{"GOMLX_BACKEND", "GoMLX backend of the learned experiments (default: the Go backend; e.g. xla:cuda with the xla build tag)"},
	{"DFX_MNIST_MODEL", "mnist-model: the ε-network to evaluate, a network or candidate name (default eps), read from DFX_MNIST_NETS or the committed checkpoints"},
	{"DFX_MNIST_CANDIDATES", "mnist-candidates: folder of the candidate ε-networks' checkpoints or training states (default dfx-nets)"},
	{"DFX_MNIST_DIR", "folder of the MNIST IDX files (default: the GoMNIST module's data folder)"},
	{"DFX_MNIST_NETS", "mnist, adjoint: folder of the networks written by `dfx train`, holding all four; mnist-baselines: its classifier (default: the committed mnist/checkpoints, compiled in)"},
}

func reproduceUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: dfx reproduce <experiment…|all> [-quick] [-out figures]\n")
	fmt.Fprintf(w, "Runs each experiment and swaps its outputs into OUT/<experiment>; progress goes to stderr, the list of folders written to stdout at the end.\n")
	fmt.Fprintf(w, "Profiles: full (default; the committed figures) or -quick (small, minutes; the default when DFX_QUICK=1).\n")
	fmt.Fprintf(w, "  -out DIR   output folder, one sub-folder per experiment (default \"figures\")\n")
	fmt.Fprintf(w, "  -quick     quick profile\n")
	fmt.Fprintln(w, "experiments:")
	for _, n := range experimentNames() {
		fmt.Fprintf(w, "  %-12s %s\n", n, experimentDocs[n])
	}
	fmt.Fprintf(w, "  %-12s every experiment above but mnist-candidates, mnist-model and mnist-ablation (training runs of their own), in this order\n", "all")
	fmt.Fprintln(w, "environment:")
	for _, e := range reproduceEnv {
		fmt.Fprintf(w, "  %-14s %s\n", e[0], e[1])
	}
	fmt.Fprintln(w, "exit status: 0 done, 1 an experiment failed or was interrupted, 2 bad input")
}

func runReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx reproduce", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "figures", "output folder (one sub-folder per experiment)")
	quick := fs.Bool("quick", false, "quick profile (default when DFX_QUICK=1)")
	// flags may come before or after the experiment names
	var names []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				reproduceUsage(stderr)
				return 0
			}
			return fail(stderr, "reproduce", err)
		}
		rest = fs.Args()
		if len(rest) > 0 {
			names = append(names, rest[0])
			rest = rest[1:]
		}
	}
	switch q := os.Getenv(report.QuickEnv); {
	case isSet(fs, "quick"):
	case q == "1":
		*quick = report.QuickProfile()
	case q != "" && q != "0":
		return fail(stderr, "reproduce", fmt.Errorf("%s=%q, want 1, 0 or unset", report.QuickEnv, q))
	}
	if len(names) == 0 {
		return fail(stderr, "reproduce", fmt.Errorf("name an experiment (%s) or all", strings.Join(experimentNames(), ", ")))
	}
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, n := range experimentNames() {
			if !notInAll[n] {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		if _, ok := experiments[n]; !ok {
			return fail(stderr, "reproduce", fmt.Errorf("unknown experiment %q (want one of %s, all)", n, strings.Join(experimentNames(), ", ")))
		}
	}
	if err := preflightReproduce(*out, names); err != nil {
		return failErr(stderr, "reproduce", err)
	}
	profile := "full"
	if *quick {
		profile = "quick"
	}
	var done []string
	for _, n := range names {
		start := time.Now()
		dir := filepath.Join(*out, n)
		fmt.Fprintf(stderr, "reproduce %s (%s) → %s\n", n, profile, dir)
		if err := reproduce(ctx, n, *out, *quick, stderr); err != nil {
			if ctx.Err() != nil {
				err = context.Canceled
			}
			return failRun(stderr, "reproduce "+n, err)
		}
		fmt.Fprintf(stderr, "reproduce %s done in %.1fs\n", n, time.Since(start).Seconds())
		done = append(done, fmt.Sprintf("%s\t%s\t%.1fs", n, dir, time.Since(start).Seconds()))
	}
	fmt.Fprintln(stdout, strings.Join(done, "\n"))
	return 0
}

// preflightReproduce checks, before any experiment runs, the output
// folders (report.CheckDir: new, empty, or dfx's own), claims -out, and
// checks the environment the named experiments read.
func preflightReproduce(out string, names []string) error {
	if strings.TrimSpace(out) == "" {
		return badInput(errors.New("-out is empty; name an output folder"))
	}
	for _, d := range append([]string{out}, names...) {
		if d != out {
			d = filepath.Join(out, d)
		}
		if err := report.CheckDir(d); err != nil {
			return badInput(fmt.Errorf("-out: %w", err))
		}
	}
	if err := checkBackend(); err != nil {
		return err
	}
	for _, n := range names {
		var err error
		switch n {
		case "toys", "toys-others":
			err = checkRetrainEnv()
		case "mnist", "adjoint":
			if err = checkMNISTData(); err == nil {
				err = checkNets("DFX_MNIST_NETS", os.Getenv("DFX_MNIST_NETS"))
			}
		case "mnist-baselines", "mnist-exact-model", "mnist-ablation":
			err = checkMNISTData()
		case "mnist-model":
			if err = checkMNISTData(); err == nil {
				if name := os.Getenv("DFX_MNIST_MODEL"); name != "" {
					if _, serr := mnist.SpecByName(name); serr != nil {
						err = badInput(fmt.Errorf("DFX_MNIST_MODEL: %w", serr))
					}
				}
			}
		case "mnist-candidates":
			if st, serr := os.Stat(candidatesDir()); serr != nil || !st.IsDir() {
				err = badInput(fmt.Errorf("DFX_MNIST_CANDIDATES=%s is not a folder (train a candidate with `dfx train <candidate> -out DIR`)", candidatesDir()))
			}
		}
		if err != nil {
			return err
		}
	}
	if err := report.ClaimDir(out); err != nil {
		return badInput(fmt.Errorf("-out %s: cannot create the folder: %w", out, err))
	}
	f, err := os.CreateTemp(out, ".dfx-write-check-*")
	if err != nil {
		return badInput(fmt.Errorf("-out %s: not writable: %w", out, err))
	}
	f.Close()
	return os.Remove(f.Name())
}

func experimentNames() []string {
	var names []string
	for n := range experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
