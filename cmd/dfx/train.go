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

	"github.com/dfx-lab/dfx/internal/membudget"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/models/onnximport"
)

// defaultTrainOut is dfx train's output folder when -out is not given: not
// the committed mnist/checkpoints, which dfx never writes over.
const defaultTrainOut = "dfx-nets"

const trainUsage = `usage: dfx train <network> [-steps N] [-out dfx-nets] [-resume | -force] [-save-every 500] [-val-every N]
Trains one MNIST network with its fixed seed and writes its EMA weights to OUT/<network>.dfxckpt (atomically), with its
loss curve, time and machine. The resumable trainer state is saved every -save-every steps and on SIGINT/SIGTERM to
OUT/_<network>.state.dfxckpt; -resume continues from it, and a saved state is never replaced without -resume or -force.
One run at a time trains a network into OUT: a second is refused at once (exit 2). dftm and dftm-c train against
OUT/eps.dfxckpt (t_θ reads its mixture skip, ν_θ its ε-network), which must exist. OUT/<network>.dfxckpt is replaced
only if an earlier dfx train of the same network wrote it; dfx never writes over a committed file nor into a package's
folders (to change a committed network, copy the new file into mnist/checkpoints by hand). Use the networks with dfx
sample -nets OUT or DFX_MNIST_NETS=OUT. With -eps NET.dfxckpt -data POINTS, dftm or dftm-c trains for an ε-network of dfx
import on your points instead (no MNIST, no resumable state); dfx nll --checkpoint NET.dfxckpt --checkpoint OUT/dftm.dfxckpt
--trace dftm uses the pair.`

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var names []string
	for _, s := range append(mnist.Specs(), mnist.Candidates()...) {
		names = append(names, s.Name)
	}
	help := func() { trainHelp(stderr) }
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
	out := fs.String("out", defaultTrainOut, "folder of the weights checkpoint and the resumable state (created if missing)")
	resume := fs.Bool("resume", false, "continue from OUT/_<network>.state.dfxckpt")
	force := fs.Bool("force", false, "start afresh, replacing a saved state OUT/_<network>.state.dfxckpt")
	saveEvery := fs.Int("save-every", 500, "steps between saves of the resumable state")
	logEvery := fs.Int("log-every", 50, "steps per point of the recorded loss curve")
	valEvery := fs.Int("val-every", 0, "ε-networks: steps between validation bpds, logged and recorded in the checkpoint (0: none; candidates: 1000)")
	eps := fs.String("eps", "", "dftm, dftm-c: train for this ε-network checkpoint of dfx import, on -data, instead of MNIST's")
	data := fs.String("data", "", "with -eps: the points the ε-network models (IDX images, .npy or CSV), one row each")
	if code, ok := parseFlags(fs, args[1:], stderr, "train", trainUsage); !ok {
		if code == 0 {
			help()
		}
		return code
	}
	if !isSet(fs, "val-every") && mnist.IsCandidate(spec.Name) && spec.Scope == models.ScoreScope {
		*valEvery = min(1000, *steps)
	}
	if !isSet(fs, "log-every") {
		*logEvery = min(*logEvery, max(*steps, 1)) // the default never exceeds a short run
	}
	switch {
	case *steps < 1:
		return fail(stderr, "train", fmt.Errorf("--steps must be an integer ≥ 1, got %d", *steps))
	case *saveEvery < 1:
		return fail(stderr, "train", fmt.Errorf("--save-every must be an integer ≥ 1, got %d", *saveEvery))
	case *valEvery < 0:
		return fail(stderr, "train", fmt.Errorf("--val-every must be an integer ≥ 0, got %d", *valEvery))
	case *valEvery > 0 && spec.Scope != models.ScoreScope:
		return fail(stderr, "train", fmt.Errorf("--val-every applies to ε-networks, not %s", spec.Name))
	case *logEvery < 1 || *logEvery > *steps:
		return fail(stderr, "train", fmt.Errorf("--log-every must be an integer in [1, --steps], got %d", *logEvery))
	case *out == "":
		return fail(stderr, "train", fmt.Errorf("--out must name a folder"))
	}
	if *eps != "" || *data != "" {
		return trainForImported(ctx, spec, *eps, *data, *steps, *out, *resume, stdout, stderr)
	}
	if err := preflightTrain(spec, *out, *resume, *force); err != nil {
		return failErr(stderr, "train", err)
	}
	backend, err := models.NewBackend()
	if err != nil {
		return failErr(stderr, "train", err)
	}
	rec, err := mnist.TrainNetwork(ctx, backend, spec, mnist.TrainOptions{
		Steps: *steps, Out: *out, Resume: *resume, SaveEvery: *saveEvery, LogEvery: *logEvery, ValEvery: *valEvery,
		Progress: stderr, Log: stderr,
	})
	if err != nil {
		return failErr(stderr, "train", err)
	}
	fmt.Fprintf(stdout, "%s\t%d steps\t%.0f s\tfinal loss %.4g\n",
		filepath.Join(*out, spec.Name+".dfxckpt"), rec.Steps, rec.Seconds, rec.Curve.Loss[len(rec.Curve.Loss)-1])
	return 0
}

// trainForImported trains spec's trace network (t_θ or ν_θ) for the
// imported ε-network in the file eps on the points in data
// (onnximport.TrainTrace) and writes it to OUT/<network>.dfxckpt.
func trainForImported(ctx context.Context, spec mnist.NetSpec, eps, data string, steps int, out string, resume bool, stdout, stderr io.Writer) int {
	switch {
	case eps == "" || data == "":
		return fail(stderr, "train", errors.New("-eps and -data go together: the imported ε-network and the points it models"))
	case resume:
		return fail(stderr, "train", errors.New("-resume applies to MNIST training, not to -eps"))
	}
	c, err := checkpoint.Read(eps)
	if err != nil {
		return failErr(stderr, "train", fmt.Errorf("-eps: %w", err))
	}
	pts, err := readNLLPoints(nllArgs{points: data}, membudget.Budget{})
	if err != nil {
		return failErr(stderr, "train", badInput(fmt.Errorf("-data: %w", err)))
	}
	path := mnist.WeightsPath(out, spec.Name)
	if err := checkOutDir("out", out); err != nil {
		return failErr(stderr, "train", err)
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return fail(stderr, "train", fmt.Errorf("-out %s is not a folder", out))
	} else if err == nil { // a new folder is made once training has finished
		if err := checkOutFile("out", path, checkpoint.ProducedBy(mnist.TrainProducer(spec.Name))); err != nil {
			return failErr(stderr, "train", err)
		}
	}
	backend, err := models.NewBackend()
	if err != nil {
		return failErr(stderr, "train", err)
	}
	w, err := onnximport.TrainTrace(ctx, backend, c, pts.x, onnximport.TraceOptions{Objective: spec.Objective, Steps: steps, Data: data, Progress: stderr})
	if err == nil {
		w.Header.Producer = mnist.TrainProducer(spec.Name)
		if err = os.MkdirAll(out, 0o755); err == nil {
			err = w.Write(path)
		}
	}
	if err != nil {
		return failErr(stderr, "train", err)
	}
	fmt.Fprintf(stdout, "%s\t%d steps\tfor the ε-network %s\n", path, steps, eps)
	return 0
}

// trainHelp prints the usage and the networks dfx train knows.
func trainHelp(stderr io.Writer) {
	fmt.Fprintln(stderr, trainUsage)
	fmt.Fprintln(stderr, "networks (train in this order):")
	listSpecs(stderr, mnist.Specs(), 11)
	fmt.Fprintln(stderr, "candidates (ε-networks compared by validation bpd at equal training time, and the trace networks of the chosen one):")
	listSpecs(stderr, mnist.Candidates(), 16)
}

// listSpecs prints one line per network: name (padded to width), what it
// is, its steps and what it needs trained first.
func listSpecs(w io.Writer, specs []mnist.NetSpec, width int) {
	for _, s := range specs {
		need := ""
		if s.Needs != "" {
			need = " (needs " + s.Needs + ")"
		}
		fmt.Fprintf(w, "  %-*s %s, %d steps%s\n", width, s.Name, s.About, s.Steps, need)
	}
}

// preflightTrain checks everything dfx train needs before the data are
// read, and creates the output folder only when every check has passed (a
// refused command creates nothing): the folder (writable, not / nor inside
// a package's source folder), the weights file it will write (new, or its
// own earlier output: internal/outfile), the saved state (present and
// valid with -resume; never replaced without -force, and then only a
// training state of this network), the network the spec trains against,
// the backend and the data set.
func preflightTrain(spec mnist.NetSpec, out string, resume, force bool) error {
	if resume && force {
		return badInput(errors.New("-resume and -force exclude each other: continue the saved state, or replace it"))
	}
	if err := checkOutDir("out", out); err != nil {
		return err
	}
	st, statErr := os.Stat(out)
	switch {
	case statErr == nil && !st.IsDir():
		return badInput(fmt.Errorf("-out %s is not a folder", out))
	case statErr == nil:
		if err := checkTrainFolder(spec, out, resume, force); err != nil {
			return err
		}
	case resume:
		return badInput(fmt.Errorf("-resume: no saved state: folder %s does not exist", out))
	} // a new folder: checkOutDir checked its nearest existing parent
	if spec.Needs != "" {
		if _, _, err := mnist.LoadNetwork(out, spec.Needs); err != nil {
			return badInput(fmt.Errorf("%s trains against the %s network: %w", spec.Name, spec.Needs, err))
		}
	}
	if err := checkBackend(); err != nil {
		return err
	}
	if err := checkMNISTData(); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return badInput(fmt.Errorf("-out: %v", err))
	}
	return nil
}

// checkTrainFolder checks an existing output folder: no run training the
// network in it, the weights file, and the saved state.
func checkTrainFolder(spec mnist.NetSpec, out string, resume, force bool) error {
	if err := mnist.CheckTrainFree(out, spec.Name); err != nil { // before the saved state, which a running run rewrites
		return err
	}
	if err := checkOutFile("out", mnist.WeightsPath(out, spec.Name), checkpoint.ProducedBy(mnist.TrainProducer(spec.Name))); err != nil {
		return err
	}
	state := mnist.StatePath(out, spec.Name)
	_, statErr := os.Lstat(state)
	switch {
	case resume && statErr != nil:
		return badInput(fmt.Errorf("-resume: no saved state: %v", statErr))
	case resume:
		if err := checkOutFile("resume", state, func(string) error { return nil }); err != nil { // a regular file, not committed
			return err
		}
		if err := trainingStateOf(spec)(state); err != nil {
			return badInput(fmt.Errorf("-resume: %s: %w", state, err))
		}
	case statErr == nil && !force:
		return badInput(fmt.Errorf("%s holds a saved state of an earlier run: continue it with -resume, or replace it with -force", state))
	case statErr == nil: // -force replaces whatever regular file holds the state's name, unless committed
		return checkOutFile("force", state, func(string) error { return nil })
	}
	return nil
}

// trainingStateOf is the outfile.Owned of spec's saved training state: a
// valid trainer checkpoint of spec's objective.
func trainingStateOf(spec mnist.NetSpec) outfile.Owned {
	return func(path string) error {
		c, err := checkpoint.Read(path)
		if err != nil {
			return err
		}
		if c.Header.Kind != checkpoint.KindTrainer || c.Header.Objective != spec.Objective.String() {
			return fmt.Errorf("a %q checkpoint of objective %q, not the training state of %s (%s)", c.Header.Kind, c.Header.Objective, spec.Name, spec.Objective)
		}
		return nil
	}
}
