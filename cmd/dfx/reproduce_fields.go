package main

import (
	"context"
	"fmt"
	"io"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/toys"
)

func init() {
	experiments["fields"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		cfg := toys.FieldsFull()
		if quick {
			cfg = toys.FieldsQuick()
		}
		r, err := toys.RunFields(ctx, cfg)
		if err != nil {
			return nil, err
		}
		for _, s := range r.Summaries() {
			fmt.Fprintf(log, "  t=%-5g σ=%-7.3g tr F ∈ [%.4g, %.4g], negative on %.1f%% of the grid\n", s.T, s.Sigma, s.MinTrace, s.MaxTrace, 100*s.NegativeFraction)
		}
		return []report.Result{r}, nil
	}
}
