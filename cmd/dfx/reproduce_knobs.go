package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/dfx-lab/dfx/dfx/report"
)

// An experiment's own knobs are flags after its name (`dfx reproduce
// mnist-model -parts likelihood`), bound by its report.Spec.Flags; some
// also have a DFX_* variable, read when the flag is not given. Every
// knob is parsed into the experiment's job before any work.

// knobVar is a DFX_* variable behind experiments' knobs: Flag of each of
// Experiments, or their networks folder (Flag "nets") or work folder
// (Flag "work").
type knobVar struct {
	Name        string
	Experiments []string
	Flag        string
}

// knobVars are the DFX_* variables of the experiments' knobs and folders.
var knobVars = []knobVar{
	{Name: "DFX_MNIST_NETS", Experiments: []string{"mnist", "adjoint", "mnist-model", "mnist-baselines", "mnist-density"}, Flag: "nets"},
	{Name: "DFX_MNIST_MODEL", Experiments: []string{"mnist-model"}, Flag: "model"},
	{Name: "DFX_MNIST_MODEL_PARTS", Experiments: []string{"mnist-model"}, Flag: "parts"},
	{Name: "DFX_MNIST_MODEL_WORK", Experiments: []string{"mnist-model"}, Flag: "work"},
	{Name: "DFX_MNIST_MODEL_SHARD", Experiments: []string{"mnist-model"}, Flag: "shard"},
	{Name: "DFX_MNIST_CANDIDATES", Experiments: []string{"mnist-candidates"}, Flag: "dir"},
	{Name: "DFX_MNIST_DENSITY_WORK", Experiments: []string{"mnist-density"}, Flag: "work"},
	{Name: "DFX_MNIST_DENSITY_SHARD", Experiments: []string{"mnist-density"}, Flag: "shard"},
	{Name: "DFX_RETRAIN", Experiments: []string{"toys", "toys-others"}, Flag: "retrain"},
}

// knobValue records what the command line gave a knob that several named
// experiments may share; each job's own flag is set from it afterwards.
type knobValue struct {
	value  string
	isBool bool
}

func (k *knobValue) String() string     { return k.value }
func (k *knobValue) Set(v string) error { k.value = v; return nil }
func (k *knobValue) IsBoolFlag() bool   { return k.isBool }

// bindKnobs adds to fs the knobs of experiment e (a flag of the same name
// in fs, from another experiment or reproduce's own, is shared).
func bindKnobs(fs *flag.FlagSet, e report.Experiment) {
	own := flag.NewFlagSet(e.Name, flag.ContinueOnError)
	e.Configure(report.Full, own)
	own.VisitAll(func(f *flag.Flag) {
		if fs.Lookup(f.Name) != nil {
			return
		}
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		fs.Var(&knobValue{value: f.DefValue, isBool: ok && b.IsBoolFlag()}, f.Name, f.Usage)
	})
}

// configureJob is experiment e's job at profile p: its knobs from their
// variables, then from the command line (cmd, the flags reproduce parsed),
// and its Env (networks and work folders from -nets and -work, else from
// the variables).
func configureJob(e report.Experiment, p report.Profile, cmd *flag.FlagSet, env report.Env) (report.Job, report.Env, error) {
	own := flag.NewFlagSet(e.Name, flag.ContinueOnError)
	j := e.Configure(p, own)
	for _, v := range knobVars {
		val := os.Getenv(v.Name)
		if val == "" || !slices.Contains(v.Experiments, e.Name) {
			continue
		}
		switch v.Flag {
		case "nets":
			env.Nets = val
		case "work":
			env.Work = val
		default:
			if err := own.Set(v.Flag, val); err != nil {
				return nil, env, badInput(fmt.Errorf("%s=%s: %w", v.Name, val, err))
			}
		}
	}
	var err error
	cmd.Visit(func(f *flag.Flag) {
		switch {
		case err != nil:
		case f.Name == "nets":
			env.Nets = f.Value.String()
		case f.Name == "work":
			env.Work = f.Value.String()
		case own.Lookup(f.Name) != nil:
			if setErr := own.Set(f.Name, f.Value.String()); setErr != nil {
				err = badInput(fmt.Errorf("%s -%s %s: %w", e.Name, f.Name, f.Value, setErr))
			}
		}
	})
	return j, env, err
}

// knobsUsage lists experiment e's knobs, for `dfx reproduce NAME -h`.
func knobsUsage(e report.Experiment) string {
	own := flag.NewFlagSet(e.Name, flag.ContinueOnError)
	e.Configure(report.Full, own)
	var b strings.Builder
	own.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(&b, "  -%-12s %s (full profile's default %q)", f.Name, f.Usage, f.DefValue)
		for _, v := range knobVars {
			if v.Flag == f.Name && slices.Contains(v.Experiments, e.Name) {
				fmt.Fprintf(&b, "; variable %s", v.Name)
			}
		}
		b.WriteString("\n")
	})
	return b.String()
}
