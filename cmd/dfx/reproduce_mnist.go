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
