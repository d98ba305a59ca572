package main

import (
	"context"
	"io"

	"github.com/dfx-lab/dfx/ot"
)

func init() {
	experiments["ot"] = func(ctx context.Context, outDir string, quick bool, _ io.Writer) error {
		return ot.Reproduce(ctx, outDir, quick)
	}
}
