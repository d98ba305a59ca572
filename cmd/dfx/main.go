// Command dfx is the command line of the dfx toolkit:
//
//	dfx analytic   exact quantities of a data mixture at given points (JSON)
//	dfx ot         numerical optimal-transport test of PF-ODE maps
//	dfx nll        the likelihood of points (PF-ODE) under a Gaussian mixture or a network
//	dfx sample     MNIST samples (DDIM with classifier-free guidance) to PNG / .npy
//	dfx train      train the MNIST networks (resumable, fixed seed)
//	dfx ckpt       verify a checkpoint, list its variables and configuration
//	dfx import     turn an ONNX noise-prediction network into a dfx checkpoint
//	dfx reproduce  regenerate the paper's tables and figures into figures/
//
// Bad input prints one line on stderr and exits with status 2, with nothing
// on stdout; a computation that fails (or is interrupted) exits with 1.
// SIGINT and SIGTERM cancel the running command, which stops within about a
// second and removes its temporary files; a second signal kills at once.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/models/onnximport"
)

// command is one subcommand: it gets its arguments and returns an exit code.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"analytic":  {"exact log q_t, score, denoiser, Fisher trace / matrix / products of a data mixture", runAnalytic},
	"fit":       {"fit a Gaussian mixture to an IDX image set (exact model, ε-network skip): dfx fit [-components 40] [-per-class] [-rank 32] -out FILE", runFit},
	"ckpt":      {"verify a checkpoint and list its variables and configuration: dfx ckpt [--json] FILE", runCkpt},
	"import":    {"turn an ONNX noise-prediction network into a checkpoint: dfx import MODEL.onnx -param eps -schedule vp -out NET.dfxckpt", runImport},
	"nll":       {"negative log-likelihood −log q_s(x) of points by the PF-ODE (Gaussian mixture or trained network)", runNLL},
	"ot":        {"numerical OT test of PF-ODE maps (paper Section 6)", runOT},
	"sample":    {"MNIST samples (DDIM, classifier-free guidance) to a PNG grid and .npy: dfx sample [-class all] [-scale 3]", runSample},
	"train":     {"train an MNIST network (eps, dftm, dftm-c, classifier) with resume: dfx train <network> [-steps N]", runTrain},
	"reproduce": {"regenerate tables and figures: dfx reproduce <experiment|all> [-quick] [-out figures]", runReproduce},
}

func main() { os.Exit(mainWithSignals()) }

// mainWithSignals runs the command line with a context that SIGINT and
// SIGTERM cancel; after the first signal the default handling is restored,
// so a second one ends the process at once.
func mainWithSignals() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	input.Stdin = input.ContextReader(ctx, os.Stdin) // "-" stops reading on the signal too
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version") {
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	mnist.SetDataDir(os.Getenv("DFX_MNIST_DIR")) // the only place the data folder is read; mnist.DataDir checks it
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dfx: unknown command %q (want one of %s)\n", args[0], strings.Join(commandNames(), ", "))
		return 2
	}
	if _, err := tracebackEnv(); err != nil {
		return fail(stderr, args[0], err)
	}
	return runGuarded(ctx, args[0], c, args[1:], stdout, stderr)
}

// tracebackEnv reads DFX_TRACEBACK: 1 re-raises an escaped panic (with its
// trace); any other value than 1, 0 or unset is refused, not ignored.
func tracebackEnv() (bool, error) {
	switch v := os.Getenv("DFX_TRACEBACK"); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("DFX_TRACEBACK=%q, want 1, 0 or unset", v)
	}
}

// runGuarded runs one command and turns a panic that escaped it into one
// line and exit status 1: the last resort that keeps stack traces from
// users (every known cause is an error returned before it can panic).
// DFX_TRACEBACK=1 re-raises the panic, for debugging.
func runGuarded(ctx context.Context, name string, c command, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if tb, _ := tracebackEnv(); tb {
			panic(r)
		}
		fmt.Fprintf(stderr, "dfx %s: internal error: %s (rerun with DFX_TRACEBACK=1 for the trace, and report it)\n", name, oneLine(fmt.Errorf("%v", r)))
		code = 1
	}()
	return c.run(ctx, args, stdout, stderr)
}

func commandNames() []string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dfx <command> [flags]   (dfx <command> -h for its flags; dfx --version)")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// oneLine flattens a message to one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// fail prints a one-line error and returns exit status 2 (bad input).
func fail(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, context.Canceled) { // an interrupt, even inside reading an input (standard input)
		return failRun(stderr, cmd, err)
	}
	fmt.Fprintf(stderr, "dfx %s: %s\n", cmd, oneLine(err))
	return 2
}

// errBadInput marks an error about the user's input found after parsing
// (a file, a folder, an environment variable): exit status 2.
var errBadInput = errors.New("bad input")

// badInput wraps err as bad input.
func badInput(err error) error { return inputError{err} }

// inputError is an error marked as bad input, with an unchanged message.
type inputError struct{ err error }

func (e inputError) Error() string        { return e.err.Error() }
func (e inputError) Unwrap() error        { return e.err }
func (e inputError) Is(target error) bool { return target == errBadInput }

// isBadInput reports whether err is about the user's input rather than a
// failed computation: a corrupt or mismatched checkpoint, an input that is
// not a regular file, a malformed IDX file, an unusable backend, an output
// dfx may not write, or an error marked with badInput.
func isBadInput(err error) bool {
	return errors.Is(err, errBadInput) || errors.Is(err, checkpoint.ErrInvalid) || errors.Is(err, input.ErrNotRegular) ||
		errors.Is(err, mnist.ErrFormat) || errors.Is(err, workstore.ErrWork) || errors.Is(err, models.ErrBackend) ||
		errors.Is(err, outfile.ErrRefused) || errors.Is(err, onnximport.ErrBadModel) || errors.Is(err, onnximport.ErrBadInput)
}

// failErr is fail for bad input (isBadInput) and failRun for the rest.
func failErr(stderr io.Writer, cmd string, err error) int {
	if isBadInput(err) && !errors.Is(err, context.Canceled) {
		return fail(stderr, cmd, err)
	}
	return failRun(stderr, cmd, err)
}

// failRun prints a one-line error for a computation that failed or was
// interrupted and returns exit status 1.
func failRun(stderr io.Writer, cmd string, err error) int {
	if errors.Is(err, context.Canceled) {
		err = errors.New("interrupted")
	}
	fmt.Fprintf(stderr, "dfx %s: %s\n", cmd, oneLine(err))
	return 1
}
