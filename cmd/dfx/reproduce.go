package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/dfx/report"
	_ "github.com/dfx-lab/dfx/ot"
	_ "github.com/dfx-lab/dfx/studies/access"
	_ "github.com/dfx-lab/dfx/studies/adjoint"
	_ "github.com/dfx-lab/dfx/studies/density"
	_ "github.com/dfx-lab/dfx/studies/likelihood"
	_ "github.com/dfx-lab/dfx/studies/model"
)

// The experiments are report's registry, filled by the study packages
// imported here; `dfx reproduce`, the notebooks (notebook.Run) and the
// tests run them through it.

// quickEnv selects the quick profile as -quick's default.
const quickEnv = "DFX_QUICK"

// reproduceEnv lists the environment variables reproduce and the
// experiments read, for -h.
var reproduceEnv = [][2]string{
	{"DFX_QUICK=1", "makes -quick the default"},
	{"DFX_RETRAIN=1", "toys, toys-others (-retrain; 1, 0 or unset): retrain instead of loading the committed " +
		"checkpoints, and rewrite toys/checkpoints (run from the repository root)"},
	{"GOMLX_BACKEND", "GoMLX backend of the learned experiments (default: the Go backend; e.g. xla:cuda with the xla build tag)"},
	{"DFX_MNIST_MODEL", "mnist-model: the ε-network to evaluate, a network or candidate name (default eps), read " +
		"from DFX_MNIST_NETS or the committed checkpoints"},
	{"DFX_MNIST_MODEL_WORK", "mnist-model: folder that keeps the likelihood (mnist-model-likelihood.json, saved every batch: " +
		"a run resumes; one run at a time per folder, a second is refused at once) and the samples (samples_s<scale>.idx, " +
		"described in mnist-model-samples.json); parts found there with the same settings and network are read, not " +
		"recomputed (e.g. computed on a GPU machine), as are an earlier dfx's likelihood.json and samples_s<scale>.json"},
	{"DFX_MNIST_MODEL_SHARD", "mnist-model: k/n (with DFX_MNIST_MODEL_WORK): compute only every n-th batch of the " +
		"likelihood, starting at the k-th, into the folder's mnist-model-likelihood.shard-k-of-n.json, and write no " +
		"report (no -out; stdout names the file); the run without it then reads every file"},
	{"DFX_MNIST_MODEL_PARTS", "mnist-model: the parts to compute, comma-separated likelihood,samples,quality " +
		"(default all; without quality no classifier or training images are needed)"},
	{"DFX_MNIST_DENSITY_WORK", "mnist-density: folder that keeps the network's levels and every finished row " +
		"(density-<profile>.json, saved after each row: a run resumes; one run at a time per file, a second is " +
		"refused at once, see DFX_MNIST_DENSITY_SHARD); rows found there with the same settings and networks are " +
		"read, not recomputed (e.g. computed on a GPU machine)"},
	{"DFX_MNIST_DENSITY_SHARD", "mnist-density: k/n (with DFX_MNIST_DENSITY_WORK): compute only every n-th row, " +
		"starting at the k-th, into the folder's density-<profile>.shard-k-of-n.json, and write no report (no -out; " +
		"stdout names the file), so that n runs share the rows side by side (one per core or machine; shards after " +
		"the first wait for the first's network levels); the run without it then reads every file and writes the " +
		"whole report"},
	{"DFX_MNIST_CANDIDATES", "mnist-candidates: folder of the candidate ε-networks' checkpoints or training states (default dfx-nets)"},
	{"DFX_MNIST_DIR", "folder of the MNIST IDX files (default: the GoMNIST module's data folder)"},
	{"DFX_MNIST_NETS", "mnist, adjoint: folder of the networks written by `dfx train`, holding all four; " +
		"mnist-baselines: its classifier (default: the committed mnist/checkpoints, compiled in)"},
}

// reproduceHelp is the usage, or the knobs of the experiments named
// before -h.
func reproduceHelp(w io.Writer, names []string) {
	if len(names) == 0 {
		reproduceUsage(w)
		return
	}
	for _, n := range names {
		e, ok := report.Lookup(n)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "dfx reproduce %s [-quick] [-out figures] [-nets DIR] [-work DIR] [knobs]\n  %s\n", n, e.Doc)
		if k := knobsUsage(e); k != "" {
			fmt.Fprintf(w, "knobs:\n%s", k)
		}
	}
}

func reproduceUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: dfx reproduce <experiment…|all> [-quick] [-out figures] [-nets DIR] [-work DIR] [knobs]\n")
	fmt.Fprintf(w, "Runs each experiment and swaps its outputs into OUT/<experiment>; progress goes to stderr, the "+
		"list of folders written to stdout at the end.\n")
	fmt.Fprintf(w, "Profiles: full (default; the committed figures) or -quick (small, minutes; the default when DFX_QUICK=1).\n")
	fmt.Fprintf(w, "  -out DIR   output folder, one sub-folder per experiment (default \"figures\")\n")
	fmt.Fprintf(w, "  -quick     quick profile\n")
	fmt.Fprintf(w, "  -nets DIR  networks folder written by `dfx train` (default: the committed networks)\n")
	fmt.Fprintf(w, "  -work DIR  folder where a resumable experiment keeps its finished parts\n")
	fmt.Fprintf(w, "  knobs      an experiment's own flags, after its name: `dfx reproduce NAME -h` lists them\n")
	fmt.Fprintln(w, "experiments:")
	for _, e := range report.Experiments() {
		fmt.Fprintf(w, "  %-12s %s\n", e.Name, e.Doc)
	}
	fmt.Fprintf(w, "  %-12s every experiment above but %s (they read a researcher's own runs, or take hours at their "+
		"full profile: run them by name), in this order\n", "all", strings.Join(standalone(), ", "))
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
	fs.String("nets", "", "networks folder written by `dfx train` (default: the committed networks)")
	fs.String("work", "", "folder where a resumable experiment keeps its finished parts")
	// flags may come before or after the experiment names; an experiment's
	// own knobs come after its name
	var names []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				reproduceHelp(stderr, names)
				return 0
			}
			return fail(stderr, "reproduce", err)
		}
		rest = fs.Args()
		if len(rest) > 0 {
			names = append(names, rest[0])
			if e, ok := report.Lookup(rest[0]); ok {
				bindKnobs(fs, e)
			}
			rest = rest[1:]
		}
	}
	switch q := os.Getenv(quickEnv); {
	case isSet(fs, "quick"):
	case q == "1":
		*quick = true
	case q != "" && q != "0":
		return fail(stderr, "reproduce", fmt.Errorf("%s=%q, want 1, 0 or unset", quickEnv, q))
	}
	if len(names) == 0 {
		return fail(stderr, "reproduce", fmt.Errorf("name an experiment (%s) or all", strings.Join(experimentNames(), ", ")))
	}
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, e := range report.Experiments() {
			if !e.Standalone {
				names = append(names, e.Name)
			}
		}
	}
	for _, n := range names {
		if _, ok := report.Lookup(n); !ok {
			return fail(stderr, "reproduce", fmt.Errorf("unknown experiment %q (want one of %s, all)", n, strings.Join(experimentNames(), ", ")))
		}
	}
	if err := retrainEnv(); err != nil {
		return failErr(stderr, "reproduce", err)
	}
	profile := report.Full
	if *quick {
		profile = report.Quick
	}
	jobs, envs, err := configure(names, profile, fs, stderr)
	if err != nil {
		return failErr(stderr, "reproduce", err)
	}
	if n, file, ok := shardJob(jobs); ok {
		// A shard computes rows into the work folder and writes no report:
		// its partial one would replace the whole report in -out, and
		// shards side by side would race on -out and its index.
		if len(names) != 1 {
			return fail(stderr, "reproduce", fmt.Errorf("a shard of %s is for `dfx reproduce %s` alone (drop its -shard for %s)", n, n, strings.Join(names, ", ")))
		}
		if isSet(fs, "out") {
			return fail(stderr, "reproduce", fmt.Errorf("%s: a shard writes no report, only its rows into the work folder; "+
				"drop -out (the run without a shard writes the report)", n))
		}
		return reproduceShard(ctx, n, file, profile, jobs[n], envs[n], stdout, stderr)
	}
	if err := preflightReproduce(*out, names, jobs, envs); err != nil {
		return failErr(stderr, "reproduce", err)
	}
	var done []string
	for _, n := range names {
		start := time.Now()
		dir := filepath.Join(*out, n)
		fmt.Fprintf(stderr, "reproduce %s (%s) → %s\n", n, profile, dir)
		if err := reproduce(ctx, n, *out, profile, jobs[n], envs[n]); err != nil {
			if ctx.Err() != nil {
				err = context.Canceled
			}
			return failErr(stderr, "reproduce "+n, err) // a work file found unusable mid-run (workstore.ErrWork) is bad input
		}
		fmt.Fprintf(stderr, "reproduce %s done in %.1fs\n", n, time.Since(start).Seconds())
		done = append(done, fmt.Sprintf("%s\t%s\t%.1fs", n, dir, time.Since(start).Seconds()))
	}
	fmt.Fprintln(stdout, strings.Join(done, "\n"))
	return 0
}

// preflightReproduce checks, before any experiment runs, the output
// folders (report.CheckDir: new, empty, or dfx's own), the backend and
// each named experiment's settings (Experiment.Check), and claims -out.
func preflightReproduce(out string, names []string, jobs map[string]report.Job, envs map[string]report.Env) error {
	if strings.TrimSpace(out) == "" {
		return badInput(errors.New("-out is empty; name an output folder"))
	}
	if err := checkOutDir("out", out); err != nil {
		return err
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
		if err := jobs[n].Check(envs[n]); err != nil {
			return badInput(fmt.Errorf("%s: %w%s", n, err, envHint(n)))
		}
	}
	if err := report.ClaimDir(out); err != nil {
		return badInput(fmt.Errorf("-out %s: cannot create the folder: %w", out, err))
	}
	return nil
}

// configure returns each named experiment's job at profile p and its
// Env (configureJob).
func configure(names []string, p report.Profile, cmd *flag.FlagSet, log io.Writer) (map[string]report.Job, map[string]report.Env, error) {
	jobs, envs := map[string]report.Job{}, map[string]report.Env{}
	for _, n := range names {
		e, _ := report.Lookup(n)
		j, env, err := configureJob(e, p, cmd, report.Env{Log: log})
		if err != nil {
			return nil, nil, err
		}
		jobs[n], envs[n] = j, env
	}
	return jobs, envs, nil
}

// standalone lists the experiments `all` leaves out.
func standalone() []string {
	var out []string
	for _, e := range report.Experiments() {
		if e.Standalone {
			out = append(out, e.Name)
		}
	}
	return out
}

// experimentNames lists the registered experiments.
func experimentNames() []string {
	var names []string
	for _, e := range report.Experiments() {
		names = append(names, e.Name)
	}
	return names
}

// shardJob finds a job that runs as a shard (its configuration has a
// ShardFile and is a shard): its experiment and its work file.
func shardJob(jobs map[string]report.Job) (name, file string, ok bool) {
	for n, j := range jobs {
		if sh, is := j.Config().(interface{ ShardFile() (string, bool) }); is {
			if f, shard := sh.ShardFile(); shard {
				return n, f, true
			}
		}
	}
	return "", "", false
}

// reproduceShard runs the shard job j of experiment n: its checks, then
// its rows into the work folder; stdout gets the shard's work file.
func reproduceShard(ctx context.Context, n, file string, profile report.Profile, j report.Job, env report.Env, stdout, stderr io.Writer) int {
	if err := checkBackend(); err != nil {
		return failErr(stderr, "reproduce", err)
	}
	if err := j.Check(env); err != nil {
		return failErr(stderr, "reproduce", badInput(fmt.Errorf("%s: %w%s", n, err, envHint(n))))
	}
	start := time.Now()
	fmt.Fprintf(stderr, "reproduce %s (%s), shard → rows into %s\n", n, profile, filepath.Join(env.Work, file))
	if _, err := j.Run(ctx, env); err != nil {
		if ctx.Err() != nil {
			err = context.Canceled
		}
		return failErr(stderr, "reproduce "+n, err)
	}
	fmt.Fprintf(stderr, "reproduce %s shard done in %.1fs\n", n, time.Since(start).Seconds())
	fmt.Fprintln(stdout, filepath.Join(env.Work, file))
	return 0
}
