package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/dfx/report"
)

// experiment computes one experiment (Quick or Full profile). One result
// is written into <out>/<experiment>; several (toys-others: one per data
// set) into <out>/<experiment>/<report name> each.
type experiment func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error)

// experiments is filled by the reproduce_*.go files.
var experiments = map[string]experiment{}

func runReproduce(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx reproduce", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("out", "figures", "output folder (one sub-folder per experiment)")
	quick := fs.Bool("quick", report.QuickProfile(), "quick profile (defaults to $DFX_QUICK=1)")
	// flags may come before or after the experiment name
	var names []string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(stderr, "usage: dfx reproduce <%s|all> [-quick] [-out figures]\n", strings.Join(experimentNames(), "|"))
				return 0
			}
			return fail(stderr, "reproduce", err)
		}
		rest = fs.Args()
		if len(rest) > 0 {
			names = append(names, rest[0])
			rest = rest[1:]
		}
	}
	if len(names) == 0 {
		return fail(stderr, "reproduce", fmt.Errorf("name an experiment (%s) or all", strings.Join(experimentNames(), ", ")))
	}
	if len(names) == 1 && names[0] == "all" {
		names = experimentNames()
	}
	for _, n := range names {
		if _, ok := experiments[n]; !ok {
			return fail(stderr, "reproduce", fmt.Errorf("unknown experiment %q (want one of %s, all)", n, strings.Join(experimentNames(), ", ")))
		}
	}
	ctx := context.Background()
	for _, n := range names {
		start := time.Now()
		fmt.Fprintf(stdout, "reproduce %s → %s/%s\n", n, *out, n)
		if err := reproduce(ctx, n, *out, *quick, stdout); err != nil {
			fmt.Fprintf(stderr, "dfx reproduce %s: %s\n", n, strings.ReplaceAll(err.Error(), "\n", " "))
			return 1
		}
		fmt.Fprintf(stdout, "reproduce %s done in %.1fs\n", n, time.Since(start).Seconds())
	}
	return 0
}

func experimentNames() []string {
	var names []string
	for n := range experiments {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
