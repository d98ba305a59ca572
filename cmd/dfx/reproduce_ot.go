package main

import (
	"context"
	"io"

	"github.com/dfx-lab/dfx/dfx/report"

	"github.com/dfx-lab/dfx/ot"
)

func init() {
	experiments["ot"] = func(ctx context.Context, quick bool, _ io.Writer) ([]report.Result, error) {
		c := ot.Full()
		if quick {
			c = ot.Quick()
		}
		res, err := ot.Run(ctx, c)
		if err != nil {
			return nil, err
		}
		return []report.Result{res}, nil
	}
}
