package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// The checks a command runs on its environment before any long work, so
// that a bad variable is reported at once as bad input (exit 2), never
// after minutes of computing or as a fallback to a default.

// checkBackend creates the GoMLX backend (GOMLX_BACKEND) once and releases it.
func checkBackend() error {
	if err := models.CheckBackend(); err != nil {
		return badInput(err)
	}
	return nil
}

// retrainEnv checks DFX_RETRAIN: 1 retrains the toy networks (the -retrain
// knob of toys and toys-others, set from it through knobVars), 0 or unset
// does not; anything else is bad input.
func retrainEnv() error {
	switch v := os.Getenv("DFX_RETRAIN"); v {
	case "", "0", "1":
		return nil
	default:
		return badInput(fmt.Errorf("DFX_RETRAIN=%q, want 1, 0 or unset", v))
	}
}

// envHint names the variables behind experiment name's settings that are
// set (knobVars), for the message of a failed check.
func envHint(name string) string {
	var vars []string
	image := strings.HasPrefix(name, "mnist") || name == "adjoint"
	if d := os.Getenv("DFX_MNIST_DIR"); d != "" && image {
		vars = append(vars, "DFX_MNIST_DIR="+d)
	}
	for _, v := range knobVars {
		val := os.Getenv(v.Name)
		if val != "" && slices.Contains(v.Experiments, name) && !slices.Contains(vars, v.Name+"="+val) {
			vars = append(vars, v.Name+"="+val)
		}
	}
	if len(vars) == 0 {
		return ""
	}
	return " (" + strings.Join(vars, ", ") + ")"
}

// checkMNISTData reads the MNIST training and test sets (DFX_MNIST_DIR, or
// the GoMNIST module's data folder) and checks them.
func checkMNISTData() error {
	if err := mnist.CheckData(); err != nil {
		return mnistDataErr(err)
	}
	return nil
}

// mnistDataErr marks an error reading the data set as bad input, naming
// DFX_MNIST_DIR when it is set.
func mnistDataErr(err error) error {
	if d := os.Getenv("DFX_MNIST_DIR"); d != "" {
		return badInput(fmt.Errorf("DFX_MNIST_DIR=%s: %w", d, err))
	}
	return badInput(err)
}

// checkOutFile checks, before any work, the output file that -flagName
// names (internal/outfile's policy): a new regular file, or one that owned
// says this command wrote, in an existing folder that is not a package's
// source folder.
func checkOutFile(flagName, p string, owned outfile.Owned) error {
	if p == "" {
		return nil
	}
	if err := outfile.Check(p, owned); err != nil {
		return badInput(fmt.Errorf("-%s %w", flagName, err))
	}
	return nil
}

// checkOutDir checks an output folder (train's and reproduce's -out): not
// the file system's root, not a source folder (report.CheckNotSource), and
// it or, where it is still to be made, its nearest existing parent a
// writable folder outside any package's source folders.
func checkOutDir(flagName, dir string) error {
	if err := report.CheckNotSource(dir); err != nil {
		return badInput(fmt.Errorf("-%s: %w", flagName, err))
	}
	if err := outfile.CheckFolderFor(dir); err != nil {
		return badInput(fmt.Errorf("-%s %s: %w", flagName, dir, err))
	}
	return nil
}
