package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRetrainOutsideTheRepositoryRootIsBadInput: -retrain (or DFX_RETRAIN=1)
// rewrites toys/checkpoints, so from any other folder (the tests run in
// cmd/dfx) it is refused as one line, exit 2, before any training; an
// unset or 0 variable is no retraining.
func TestRetrainOutsideTheRepositoryRootIsBadInput(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
	}{
		{"", []string{"toys", "-retrain"}},
		{"1", []string{"toys"}},
		{"1", []string{"toys-others"}},
		{"", []string{"toys-others", "-retrain"}},
	} {
		t.Setenv("DFX_RETRAIN", c.env)
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, errOut := runCLI(append([]string{"reproduce", "-quick", "-out", out}, c.args...)...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "repository root") {
			t.Errorf("DFX_RETRAIN=%q %v: exit %d, stdout %q, stderr %q; want 2, nothing, one line naming the repository root", c.env, c.args, code, stdout, errOut)
		}
	}
	t.Setenv("DFX_RETRAIN", "0")
	code, _, errOut := runCLI("reproduce", "toys", "-h")
	if code != 0 || !strings.Contains(errOut, "-retrain") || !strings.Contains(errOut, "DFX_RETRAIN") || !strings.Contains(errOut, `default "false"`) {
		t.Errorf("toys -h: exit %d, %q", code, errOut)
	}
}
