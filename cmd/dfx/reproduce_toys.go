package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/toys"
)

func init() {
	experiments["toys"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		cfg, err := toys.ReproduceConfig(quick)
		if err != nil {
			return nil, err
		}
		res, err := toys.Run(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "toys: computed in %.1fs\n", res.Elapsed.Seconds())
		return []report.Result{res}, nil
	}
	experiments["toys-others"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		rs, err := toys.RunOthers(ctx, quick, log)
		if err != nil {
			return nil, err
		}
		out := make([]report.Result, len(rs))
		for i, r := range rs {
			out[i] = r
		}
		return out, nil
	}
}
