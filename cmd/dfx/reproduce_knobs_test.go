package main

import (
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
)

type knobConfig struct {
	Size  int
	Loud  bool
	Label string
}

type knobResult struct{}

func (knobResult) Report() (*report.Report, error) {
	return &report.Report{Name: "zz-knobs", Files: []*report.File{{Name: "k.txt", Data: []byte("k\n")}}}, nil
}

// seen records what the last run of zz-knobs got.
var seen struct {
	cfg knobConfig
	env report.Env
}

func init() {
	report.Register(report.Spec[knobConfig]{
		Name: "zz-knobs", Doc: "a test experiment with knobs", Standalone: true,
		Quick: func() knobConfig { return knobConfig{Size: 1, Label: "q"} },
		Full:  func() knobConfig { return knobConfig{Size: 100, Label: "f"} },
		Flags: func(fs *flag.FlagSet, c *knobConfig) {
			fs.IntVar(&c.Size, "size", c.Size, "how many")
			fs.BoolVar(&c.Loud, "loud", c.Loud, "louder")
			fs.StringVar(&c.Label, "label", c.Label, "a label")
		},
		Check: func(c knobConfig, _ report.Env) error {
			if c.Size < 1 {
				return errors.New("size below 1")
			}
			return nil
		},
		Run: func(_ context.Context, c knobConfig, env report.Env) (report.Result, error) {
			seen.cfg, seen.env = c, env
			return knobResult{}, nil
		},
	})
	knobVars = append(knobVars, knobVar{Name: "DFX_TEST_KNOB_LABEL", Experiments: []string{"zz-knobs"}, Flag: "label"},
		knobVar{Name: "DFX_TEST_KNOB_WORK", Experiments: []string{"zz-knobs"}, Flag: "work"})
}

func TestReproduceKnobsComeFromFlagsAfterTheNameThenVariablesThenTheProfile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, errOut := runCLI("reproduce", "-quick", "-out", out, "zz-knobs", "-size", "7", "-loud", "-nets", "n1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if seen.cfg != (knobConfig{Size: 7, Loud: true, Label: "q"}) || seen.env.Nets != "n1" || seen.env.Work != "" {
		t.Errorf("flags: the run saw %+v in %+v", seen.cfg, seen.env)
	}
	t.Setenv("DFX_TEST_KNOB_LABEL", "from-var")
	t.Setenv("DFX_TEST_KNOB_WORK", "w1")
	out2 := filepath.Join(t.TempDir(), "out")
	if code, _, errOut := runCLI("reproduce", "zz-knobs", "-out", out2); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if seen.cfg != (knobConfig{Size: 100, Label: "from-var"}) || seen.env.Work != "w1" {
		t.Errorf("variables: the run saw %+v in %+v", seen.cfg, seen.env)
	}
	out3 := filepath.Join(t.TempDir(), "out")
	if code, _, errOut := runCLI("reproduce", "zz-knobs", "-label", "flag", "-work", "w2", "-out", out3); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if seen.cfg.Label != "flag" || seen.env.Work != "w2" {
		t.Errorf("a flag does not override its variable: the run saw %+v in %+v", seen.cfg, seen.env)
	}
}

func TestReproduceRefusesBadKnobsBeforeWork(t *testing.T) {
	seen.cfg = knobConfig{}
	for _, args := range [][]string{
		{"zz-knobs", "-size", "x"},
		{"zz-knobs", "-size", "0"},
		{"zz-knobs", "-unknown", "1"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, errOut := runCLI(append([]string{"reproduce", "-out", out}, args...)...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, one line", args, code, stdout, errOut)
		}
		if seen.cfg != (knobConfig{}) {
			t.Errorf("%v: the experiment ran (%+v)", args, seen.cfg)
		}
	}
	code, _, errOut := runCLI("reproduce", "zz-knobs", "-h")
	if code != 0 || !strings.Contains(errOut, "-size") || !strings.Contains(errOut, "DFX_TEST_KNOB_LABEL") {
		t.Errorf("zz-knobs -h: exit %d, %q", code, errOut)
	}
}
