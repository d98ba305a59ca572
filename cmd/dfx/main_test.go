package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestAnalyticAnswersAsSpecified(t *testing.T) {
	data := writeTemp(t, "y.csv", "0,0\n1,0\n0,2\n")
	pts := writeTemp(t, "x.csv", "0.3,0.4\n-1,1\n")
	w := writeTemp(t, "w.csv", "1\n2\n1\n")
	vec := writeTemp(t, "v.csv", "1,-1\n")
	code, out, errOut := runCLI("analytic", "--data", data, "--points", pts, "--schedule", "vp", "--beta-max", "10",
		"--t", "0.4", "--weights", w, "--vec", vec, "--full")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		Points []analyticPoint `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
	if len(got.Points) != 2 {
		t.Fatalf("want 2 points, got %d", len(got.Points))
	}
	// Same numbers as the library.
	s, _ := schedule.ByName("vp", schedule.Params{BetaMax: 10})
	m, _ := mixture.NewDirac(mat.NewDense(3, 2, []float64{0, 0, 1, 0, 0, 2}), []float64{1, 2, 1})
	c, _ := schedule.At(s, 0.4)
	r, err := m.Eval(mixture.Query{At: c, X: mat.NewDense(2, 2, []float64{0.3, 0.4, -1, 1}),
		V: mat.NewDense(1, 2, []float64{1, -1}), Want: mixture.Trace | mixture.MatVec | mixture.Full | mixture.LogProb})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got.Points {
		if p.Trace != r.Trace[i] || p.LogP != r.LogProb[i] || p.MatVec[1] != r.MatVec.At(i, 1) || p.Fisher[0][1] != r.Fisher[i].At(0, 1) {
			t.Errorf("point %d differs from the library: %+v", i, p)
		}
		if len(p.Score) != 2 || len(p.Denoiser) != 2 || len(p.Fisher) != 2 {
			t.Errorf("point %d: wrong shapes %+v", i, p)
		}
	}
	// Without --full and --vec those keys are absent.
	_, out, _ = runCLI("analytic", "--data", data, "--points", pts, "--schedule", "ve", "--t", "0.5")
	if strings.Contains(out, "fisher") || strings.Contains(out, "matvec") || !strings.Contains(out, `"trace"`) {
		t.Errorf("unexpected keys: %s", out)
	}
}

func TestAnalyticBadInputExitsTwoWithOneLine(t *testing.T) {
	data := writeTemp(t, "y.csv", "0,0\n1,0\n")
	pts := writeTemp(t, "x.csv", "0.3,0.4\n")
	pts3 := writeTemp(t, "x3.csv", "0.3,0.4,1\n")
	bad := writeTemp(t, "bad.csv", "1,oops\n")
	negw := writeTemp(t, "w.csv", "1\n-1\n")
	cases := [][]string{
		{"analytic", "--data", data, "--points", pts3, "--schedule", "ve", "--t", "0.5"},               // dim mismatch
		{"analytic", "--data", data, "--points", pts, "--schedule", "ve", "--t", "2"},                  // t outside
		{"analytic", "--data", data, "--points", pts, "--schedule", "edm", "--t", "0", "--t-min", "0"}, // σ = 0
		{"analytic", "--data", data, "--points", pts, "--schedule", "nope", "--t", "0.5"},              // schedule
		{"analytic", "--data", bad, "--points", pts, "--schedule", "ve", "--t", "0.5"},                 // parse
		{"analytic", "--data", data, "--points", pts, "--schedule", "ve", "--t", "NaN"},                // NaN t
		{"analytic", "--data", data, "--points", pts, "--schedule", "ve", "--t", "0.5", "--weights", negw},
		{"analytic", "--data", data, "--points", pts, "--t", "0.5"}, // no schedule
		{"analytic", "--data", "/nonexistent.csv", "--points", pts, "--schedule", "ve", "--t", "0.5"},
		{"analytic", "--bogus"},
		{"nosuchcommand"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c, code, out, errOut)
		}
	}
}

// dfx sample -density writes density-guided unconditional samples on the
// committed networks, prints the path alone on stdout and the tracked bpd
// on stderr; an offset that raises log q ends with lower tracked bpd than
// one that lowers it, from the same noises.
func TestSampleDensityWritesGuidedSamples(t *testing.T) {
	dir := t.TempDir()
	tracked := map[string]float64{}
	for _, target := range []string{"offset:400", "offset:-400"} {
		out := filepath.Join(dir, strings.ReplaceAll(target, ":", "")+".npy")
		code, stdout, stderr := runCLI("sample", "-density", target, "-n", "2", "-steps", "24", "-npy", out)
		if code != 0 || strings.TrimSpace(stdout) != out {
			t.Fatalf("%s: exit %d, stdout %q, stderr %s", target, code, stdout, stderr)
		}
		if _, err := os.Stat(out); err != nil {
			t.Fatal(err)
		}
		_, after, ok := strings.Cut(stderr, "trace): ")
		if !ok {
			t.Fatalf("%s: no tracked bpd on stderr: %s", target, stderr)
		}
		var a, b float64
		if _, err := fmt.Sscanf(after, "%g %g", &a, &b); err != nil {
			t.Fatalf("%s: %v in %q", target, err, after)
		}
		tracked[target] = (a + b) / 2
	}
	if !(tracked["offset:400"] < tracked["offset:-400"]-0.5) {
		t.Errorf("tracked bpd %v: raising log q by 400 nats did not lower the bpd by ≥ 0.5 against lowering it", tracked)
	}
}
