package main

import (
	"context"
	"io"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/toys"
)

func init() {
	experiments["access"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		r, err := toys.RunAccessAll(ctx, quick, log)
		if err != nil {
			return nil, err
		}
		return []report.Result{r}, nil
	}
}
