package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
)

func init() {
	experiments["mnist"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		cfg := mnist.FullConfig()
		if quick {
			cfg = mnist.QuickConfig()
		}
		cfg.NetsDir = os.Getenv("DFX_MNIST_NETS")
		res, err := mnist.Run(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "mnist: computed in %.1fs\n", res.Elapsed.Seconds())
		return []report.Result{res}, nil
	}
}

func init() {
	experiments["adjoint"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		cfg := mnist.AdjointFullConfig()
		if quick {
			cfg = mnist.AdjointQuickConfig()
		}
		cfg.NetsDir = os.Getenv("DFX_MNIST_NETS")
		res, err := mnist.RunAdjoint(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "adjoint: computed in %.1fs\n", res.Elapsed.Seconds())
		return []report.Result{res}, nil
	}
	experimentDocs["adjoint"] = "paper Figures 3–4 on MNIST: adjoint guidance with VJP vs DF-EA, the strength grid search, cost per step, and the exact-operator study on the 60 000-image Dirac mixture"
}
