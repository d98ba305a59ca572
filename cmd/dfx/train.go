package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

const trainUsage = `usage: dfx train <network> [-steps N] [-out mnist/checkpoints] [-resume] [-save-every 500]
Trains one MNIST network with its fixed seed and writes its EMA weights to OUT/<network>.dfxckpt (atomically), with its loss curve, time and machine. The resumable trainer state is saved every -save-every steps and on SIGINT/SIGTERM to OUT/_<network>.state.dfxckpt; -resume continues from it. Run from the repository root to rewrite the committed checkpoints.`

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, s := range mnist.Specs() {
		names = append(names, s.Name)
	}
	help := func() {
		fmt.Fprintln(stderr, trainUsage)
		fmt.Fprintln(stderr, "networks (train in this order):")
		for _, s := range mnist.Specs() {
			need := ""
			if s.Needs != "" {
				need = " (needs " + s.Needs + ")"
			}
			fmt.Fprintf(stderr, "  %-11s %s, %d steps%s\n", s.Name, s.About, s.Steps, need)
		}
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			help()
			return 0
		}
		return fail(stderr, "train", fmt.Errorf("name the network to train first (one of %s)", strings.Join(names, ", ")))
	}
	spec, err := mnist.SpecByName(args[0])
	if err != nil {
		return fail(stderr, "train", err)
	}
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	steps := fs.Int("steps", spec.Steps, "training steps (the committed checkpoints use the default)")
	out := fs.String("out", filepath.Join("mnist", "checkpoints"), "folder of the weights checkpoint and the resumable state")
	resume := fs.Bool("resume", false, "continue from OUT/_<network>.state.dfxckpt")
	saveEvery := fs.Int("save-every", 500, "steps between saves of the resumable state")
	logEvery := fs.Int("log-every", 50, "steps per point of the recorded loss curve")
	if code, ok := parseFlags(fs, args[1:], stderr, "train", trainUsage); !ok {
		if code == 0 {
			help()
		}
		return code
	}
	if !isSet(fs, "log-every") {
		*logEvery = min(*logEvery, max(*steps, 1)) // the default never exceeds a short run
	}
	switch {
	case *steps < 1:
		return fail(stderr, "train", fmt.Errorf("--steps must be an integer ≥ 1, got %d", *steps))
	case *saveEvery < 1:
		return fail(stderr, "train", fmt.Errorf("--save-every must be an integer ≥ 1, got %d", *saveEvery))
	case *logEvery < 1 || *logEvery > *steps:
		return fail(stderr, "train", fmt.Errorf("--log-every must be an integer in [1, --steps], got %d", *logEvery))
	case *out == "":
		return fail(stderr, "train", fmt.Errorf("--out must name a folder"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fail(stderr, "train", fmt.Errorf("--out: %v", err))
	}
	if probe, err := os.CreateTemp(*out, ".tmp-probe-*"); err != nil {
		return fail(stderr, "train", fmt.Errorf("--out %s is not writable: %v", *out, err))
	} else {
		probe.Close()
		os.Remove(probe.Name())
	}
	if *resume {
		if _, err := os.Stat(filepath.Join(*out, "_"+spec.Name+".state.dfxckpt")); err != nil {
			return fail(stderr, "train", fmt.Errorf("--resume: no saved state: %v", err))
		}
	}
	backend, err := models.NewBackend()
	if err != nil {
		return failRun(stderr, "train", err)
	}
	rec, err := mnist.TrainNetwork(ctx, backend, spec, mnist.TrainOptions{
		Steps: *steps, Out: *out, Resume: *resume, SaveEvery: *saveEvery, LogEvery: *logEvery,
		Progress: stderr, Log: stderr,
	})
	if err != nil {
		return failRun(stderr, "train", err)
	}
	fmt.Fprintf(stdout, "%s\t%d steps\t%.0f s\tfinal loss %.4g\n", filepath.Join(*out, spec.Name+".dfxckpt"), rec.Steps, rec.Seconds, rec.Curve.Loss[len(rec.Curve.Loss)-1])
	return 0
}
