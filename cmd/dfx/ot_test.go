package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runOTCLI(args ...string) (int, string, string) {
	return runCLI(append([]string{"ot"}, args...)...)
}

func TestCLIBadInputExitsTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(empty, []byte("x,y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{}, // no data
		{"--preset", "paper-affine", "--steps", "0"},
		{"--preset", "paper-affine", "--s", "5"}, // s ≥ T
		{"--preset", "nope"},
		{"--data", empty},
		{"--data", filepath.Join(dir, "missing.csv")},
		{"--gaussian", "0.5,0.5,1"},
		{"--gaussian", "0,0,1,0.5,0,1"}, // not symmetric
		{"--preset", "paper-affine", "--solver", "leapfrog"},
		{"--preset", "paper-affine", "--schedule", "cosine"},
		{"--preset", "paper-affine", "--matrix", "hessian"},
		{"--preset", "paper-affine", "--chains", "0"},
		{"--preset", "paper-affine", "--protocol", "other"},
		{"--preset", "paper-affine", "extra"},
	} {
		code, _, stderr := runOTCLI(args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, stderr)
		}
	}
	if code, _, _ := runOTCLI("--no-such-flag"); code != 2 {
		t.Errorf("unknown flag: exit %d", code)
	}
}

func TestCLIPrintsPerChainAndSummaryAsTextAndJSON(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "y.csv")
	if err := os.WriteFile(data, []byte("x,y\n0,0.5\n0,0\n0.5,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runOTCLI("--data", data, "--header", "--schedule", "ve", "--steps", "50", "--solver", "heun", "--chains", "3", "--matrix", "jacobian,paper")
	if code != 0 || !strings.Contains(out, "summary:") || !strings.Contains(out, "matrix paper") || stderr != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runOTCLI("--preset", "published-nonaffine", "--protocol", "published", "--schedule", "edm",
		"--steps", "19", "--solver", "ddim", "--matrix", "published", "--chains", "4", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Results []struct {
			Chains  []struct{ Asym *float64 } `json:"chains"`
			Summary struct{ Chains int }      `json:"summary"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Results) != 1 || len(doc.Results[0].Chains) != 4 || doc.Results[0].Summary.Chains != 4 {
		t.Fatalf("unexpected JSON %s", out)
	}
	code, _, stderr = runOTCLI("--gaussian", "0.5,0.5,0.05,0.02,0.02,0.03", "--s", "0.1", "--steps", "20", "--chains", "2", "--summary-only")
	if code != 0 {
		t.Fatalf("gaussian: exit %d: %s", code, stderr)
	}
}
