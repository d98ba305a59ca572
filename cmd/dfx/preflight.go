package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dfx-lab/dfx/dfx/report"
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

// checkRetrainEnv validates DFX_RETRAIN.
func checkRetrainEnv() error {
	switch v := os.Getenv("DFX_RETRAIN"); v {
	case "", "0", "1":
		return nil
	default:
		return badInput(fmt.Errorf("DFX_RETRAIN=%q, want 1, 0 or unset", v))
	}
}

// checkMNISTData reads the MNIST training and test sets (DFX_MNIST_DIR, or
// the GoMNIST module's data folder) and checks them.
func checkMNISTData() error {
	if err := mnist.CheckData(); err != nil {
		if d := os.Getenv("DFX_MNIST_DIR"); d != "" {
			return badInput(fmt.Errorf("DFX_MNIST_DIR=%s: %w", d, err))
		}
		return badInput(err)
	}
	return nil
}

// checkNets checks that dir ("" for the committed networks) holds every
// MNIST network, each a valid checkpoint for its spec; what names dir (a
// flag or a variable) is named in the error.
func checkNets(what, dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return badInput(fmt.Errorf("%s %s is not a folder", what, dir))
	}
	for _, s := range mnist.Specs() {
		if _, _, err := mnist.LoadNetwork(dir, s.Name); err != nil {
			return badInput(fmt.Errorf("%s %s: %w", what, dir, err))
		}
	}
	return nil
}

// checkOutFile checks an output file path before any work: a name of its
// own (not a folder), in a folder that exists.
func checkOutFile(flagName, p string) error {
	if p == "" {
		return nil
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return badInput(fmt.Errorf("-%s %s is a folder: give a file name, e.g. %s", flagName, p, filepath.Join(p, "samples."+flagName)))
	}
	if st, err := os.Stat(filepath.Dir(p)); err != nil || !st.IsDir() {
		return badInput(fmt.Errorf("-%s %s: cannot write it, its folder does not exist", flagName, p))
	}
	return nil
}

// checkOutDir checks a folder that dfx writes files into but never
// replaces whole (dfx train's -out): not the file system's root, not a
// source folder.
func checkOutDir(flagName, dir string) error {
	if err := report.CheckNotSource(dir); err != nil {
		return badInput(fmt.Errorf("-%s: %w", flagName, err))
	}
	return nil
}
