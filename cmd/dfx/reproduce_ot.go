package main

import (
	"context"
	"io"

	"github.com/dfx-lab/dfx/ot"
)

func init() {
	commands["ot"] = command{"numerical OT test of PF-ODE maps (paper Section 6): dfx ot -h", ot.Main}
	experiments["ot"] = func(ctx context.Context, outDir string, quick bool, _ io.Writer) error {
		return ot.Reproduce(ctx, outDir, quick)
	}
}
