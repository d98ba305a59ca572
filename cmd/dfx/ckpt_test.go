package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const toyCkpt = "../../toys/checkpoints/checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt"

func TestCkptVerifiesAndListsACheckpoint(t *testing.T) {
	code, out, errOut := runCLI("ckpt", toyCkpt)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"verified", "kind weights", "networks score", "/score/input/weights", "/width", "int:64", "configuration:"} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI("ckpt", "--json", toyCkpt)
	var rep ckptReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Verified || rep.Dim != 2 || len(rep.Variables) == 0 || rep.Params == 0 {
		t.Errorf("--json: exit %d, %+v", code, rep)
	}
}

func TestCkptRejectsEveryDefectWithOneLineAndExit2(t *testing.T) {
	raw, err := os.ReadFile(toyCkpt)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	flip := append([]byte(nil), raw...)
	flip[len(flip)/3] ^= 4
	files := map[string][]byte{"flipped": flip, "truncated": raw[:len(raw)/2], "junk": []byte("DFXCKPT"), "empty": nil}
	cases := [][]string{{"ckpt"}, {"ckpt", "a", "b"}, {"ckpt", "--bogus", toyCkpt}, {"ckpt", filepath.Join(dir, "absent")}}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, []string{"ckpt", p})
	}
	for _, args := range cases {
		code, out, errOut := runCLI(args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "dfx ckpt: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

func TestVersionNamesTheModuleAndToolchain(t *testing.T) {
	code, out, errOut := runCLI("--version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "dfx: github.com/dfx-lab/dfx") || !strings.Contains(out, "go1.") || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d, %q, %q", code, out, errOut)
	}
}
