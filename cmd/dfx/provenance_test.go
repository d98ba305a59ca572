package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCkptShowsProvenance: `dfx ckpt` lists the schedule, data, scaling,
// dequantisation and, for t_θ, the ε-network it was made for, which is the
// digest `dfx ckpt` shows for that ε-network.
func TestCkptShowsProvenance(t *testing.T) {
	score, dftm := toyNet(t, "score"), toyNet(t, "df-tm")
	code, out, errOut := runCLI("ckpt", dftm)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"DFXCKPT v3", "provenance:", "VE(σ_min=0.01, σ_max=50", "toys checkerboard: n=5000, data seed 1", "dequantisation", "made for ε-network"} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	var a, b ckptReport
	_, o1, _ := runCLI("ckpt", "--json", score)
	_, o2, _ := runCLI("ckpt", "--json", dftm)
	if json.Unmarshal([]byte(o1), &a) != nil || json.Unmarshal([]byte(o2), &b) != nil || b.Provenance == nil || a.Digests["score"] == "" {
		t.Fatalf("--json: %q %q", o1, o2)
	}
	if b.Provenance.EpsNetwork != a.Digests["score"] {
		t.Errorf("t_θ names ε-network %s, the score checkpoint's digest is %s", b.Provenance.EpsNetwork, a.Digests["score"])
	}
}

// TestMismatchedCheckpointsAreRefusedByNLL: a t_θ/ν_θ of another training
// seed beside the score network, or a checkpoint used with another
// schedule than it was trained on, exit 2 with one line, nothing on stdout.
func TestMismatchedCheckpointsAreRefusedByNLL(t *testing.T) {
	score := toyNet(t, "score")
	x := filepath.Join(t.TempDir(), "x.csv")
	if err := os.WriteFile(x, []byte("0.1,0.2\n-0.3,0.4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seed2 := func(net string) string {
		return strings.Replace(toyNet(t, net), "seed1", "seed2", 1)
	}
	cases := map[string][]string{
		"t_θ of seed 2":  {"--checkpoint", score, "--checkpoint", seed2("df-tm"), "--trace", "dftm"},
		"ν_θ of seed 2":  {"--checkpoint", score, "--checkpoint", seed2("df-tm-c"), "--trace", "dftm-c"},
		"other schedule": {"--checkpoint", score, "--trace", "vjp", "--schedule", "vp"},
	}
	for name, args := range cases {
		args = append([]string{"nll", "--points", x, "--steps", "4", "--solver", "euler"}, args...)
		if !strings.Contains(strings.Join(args, " "), "--schedule") {
			args = append(args, "--schedule", "ve")
		}
		code, out, errOut := runCLI(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
	}
	code, _, errOut := runCLI("nll", "--points", x, "--steps", "4", "--solver", "euler", "--schedule", "ve", "--checkpoint", score, "--checkpoint", toyNet(t, "df-tm"), "--trace", "dftm")
	if code != 0 {
		t.Errorf("the pair trained together: exit %d, %s", code, errOut)
	}
}
