package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// importedMLP imports the MLP fixture into dir and writes 40 points of its
// dimension (8) as CSV; it returns both paths.
func importedMLP(t *testing.T, dir string) (net, points string) {
	t.Helper()
	net = filepath.Join(dir, "mlp.dfxckpt")
	if code, _, stderr := runCLI("import", filepath.Join(onnxFixtures, "mlp.onnx"), "-param", "eps", "-schedule", "ve", "-time", "sigma",
		"-out", net); code != 0 {
		t.Fatalf("dfx import: exit %d: %s", code, stderr)
	}
	var b strings.Builder
	for i := range 40 {
		for j := range 8 {
			sep := ","
			if j == 7 {
				sep = "\n"
			}
			fmt.Fprintf(&b, "%g%s", float64((i*7+j*3)%11)/5-1, sep)
		}
	}
	points = filepath.Join(dir, "points.csv")
	if err := os.WriteFile(points, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return net, points
}

// dfx train dftm|dftm-c -eps trains the trace network of an imported
// ε-network; dfx nll uses the pair; the checkpoint names the ε-network.
func TestTrainTraceNetworkForAnImportedNetwork(t *testing.T) {
	dir := t.TempDir()
	net, points := importedMLP(t, dir)
	eps, err := checkpoint.Read(net)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := checkpoint.Digest(eps, models.ScoreScope)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "nets")
	for _, name := range []string{"dftm", "dftm-c"} {
		code, stdout, stderr := runCLI("train", name, "-eps", net, "-data", points, "-steps", "5", "-out", out)
		if code != 0 || !strings.Contains(stdout, name+".dfxckpt\t5 steps") {
			t.Fatalf("dfx train %s: exit %d, stdout %q, stderr %q", name, code, stdout, stderr)
		}
		c, err := checkpoint.Read(filepath.Join(out, name+".dfxckpt"))
		if err != nil {
			t.Fatal(err)
		}
		if p := c.Header.Provenance; p.EpsNetwork != digest || p.ONNX != eps.Header.Provenance.ONNX {
			t.Errorf("%s: provenance ε-network %q, ONNX %q; want %q and %q", name, p.EpsNetwork, p.ONNX, digest, eps.Header.Provenance.ONNX)
		}
		code, stdout, stderr = runCLI("nll", "--checkpoint", net, "--checkpoint", filepath.Join(out, name+".dfxckpt"), "--trace", name,
			"--points", points, "--schedule", "ve", "--rtol", "1e-3", "--atol", "1e-3")
		if code != 0 || !strings.Contains(stdout, "summary: 40 points") {
			t.Errorf("dfx nll --trace %s on the pair: exit %d, stdout %q, stderr %q", name, code, stdout, stderr)
		}
	}
}

// Bad input to dfx train -eps: one line on stderr, exit 2, nothing on
// stdout, no checkpoint written.
func TestTrainImportedBadInputWritesNothing(t *testing.T) {
	dir := t.TempDir()
	net, points := importedMLP(t, dir)
	wide := filepath.Join(dir, "wide.csv")
	if err := os.WriteFile(wide, []byte("1,2,3\n4,5,6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "nets")
	toy := filepath.Join("..", "..", "toys", "checkpoints", "checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no -data", []string{"train", "dftm", "-eps", net}, "-eps and -data go together"},
		{"no -eps", []string{"train", "dftm", "-data", points}, "-eps and -data go together"},
		{"not a trace network", []string{"train", "eps", "-eps", net, "-data", points}, "trains no trace network"},
		{"points of another dimension", []string{"train", "dftm", "-eps", net, "-data", wide}, "3 values each, the ε-network takes 8"},
		{"missing points", []string{"train", "dftm", "-eps", net, "-data", filepath.Join(dir, "none.csv")}, "none.csv"},
		{"not imported", []string{"train", "dftm", "-eps", toy, "-data", points}, "not written by dfx import"},
		{"not a checkpoint", []string{"train", "dftm", "-eps", points, "-data", points}, "-eps"},
		{"-resume", []string{"train", "dftm", "-eps", net, "-data", points, "-resume"}, "-resume applies to MNIST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append(tc.args, "-steps", "2", "-out", out)...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, one line saying %q", tc.args, code, stdout, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the output folder was made (%v)", err)
			}
		})
	}
}
