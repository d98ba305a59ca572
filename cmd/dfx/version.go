package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// versionLine says which module version and commit this binary was built
// from (the commit is stamped by `go build` in a git checkout; `go run`
// does not stamp it), with the toolchain and GOEXPERIMENT.
func versionLine() string {
	mod, commit, modified, exp := "(unknown)", "unknown (not stamped: built with go run or -buildvcs=false)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		mod = bi.Main.Path + " " + bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (with uncommitted changes)"
				}
			case "GOEXPERIMENT":
				exp = s.Value
			}
		}
	}
	if exp == "" {
		exp = "none"
	}
	return fmt.Sprintf("dfx: %s, commit %s%s, %s, GOEXPERIMENT=%s", mod, commit, modified, runtime.Version(), exp)
}

func runVersion(_ context.Context, _ []string, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, versionLine())
	return 0
}
