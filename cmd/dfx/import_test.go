package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var onnxFixtures = filepath.Join("..", "..", "models", "testdata", "onnx")

// Every bad import exits 2 with one line on stderr and nothing on stdout,
// and writes no checkpoint.
func TestImportBadInputWritesNothing(t *testing.T) {
	dir := t.TempDir()
	mlp := filepath.Join(onnxFixtures, "mlp.onnx")
	unet := filepath.Join(onnxFixtures, "unet.onnx")
	raw, err := os.ReadFile(mlp)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := file("notes.onnx", []byte("not a model\n"))
	truncated := file("cut.onnx", raw[:len(raw)/2])
	out := filepath.Join(dir, "net.dfxckpt")
	base := func(model string, extra ...string) []string {
		return append([]string{"import", model, "-param", "eps", "-schedule", "ve", "-time", "sigma", "-out", out}, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not ONNX", base(text), "not an ONNX model"},
		{"truncated", base(truncated), "ONNX model"},
		{"missing file", base(filepath.Join(dir, "none.onnx")), "none.onnx"},
		{"a folder", base(dir), "not a regular file"},
		{"no model", []string{"import", "-param", "eps", "-schedule", "ve", "-out", out}, "want the ONNX file"},
		{"no -out", []string{"import", mlp, "-param", "eps", "-schedule", "ve"}, "-out"},
		{"no -param", []string{"import", mlp, "-schedule", "ve", "-out", out}, "-param is required"},
		{"unknown -param", base(mlp, "-param", "noise"), `parameterisation "noise"`},
		{"edm is not an export", base(mlp, "-param", "edm"), `parameterisation "edm"`},
		{"unknown -time", base(mlp, "-time", "step"), `time convention "step"`},
		{"bad -time-scale", base(mlp, "-time-scale", "0"), "time scale 0"},
		{"no schedule", []string{"import", mlp, "-param", "eps", "-out", out}, "--schedule is required"},
		{"unknown schedule", base(mlp, "-schedule", "cosine"), `unknown --schedule "cosine"`},
		{"class input of a network without one", base(mlp, "-class-input", "y", "-classes", "3"), `class "y"`},
		{"class input without classes", base(unet, "-class-input", "y"), "number of classes"},
		{"class input not named", base(unet), "-class-input"},
		{"classes without a class input", base(mlp, "-classes", "3"), "no class input"},
		{"two models", append(base(mlp), unet), "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, one line saying %q", tc.args, code, stdout, stderr, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a checkpoint was written (%v)", err)
			}
		})
	}
}

// dfx import writes a checkpoint that dfx ckpt verifies and describes.
func TestImportWritesACheckpointThatCkptShows(t *testing.T) {
	out := filepath.Join(t.TempDir(), "unet.dfxckpt")
	code, stdout, stderr := runCLI("import", filepath.Join(onnxFixtures, "unet.onnx"), "-param", "v", "-schedule", "vp",
		"-time-scale", "999", "-class-input", "y", "-classes", "4", "-out", out)
	if code != 0 || !strings.Contains(stdout, "d = 64") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("ckpt", out)
	if code != 0 {
		t.Fatalf("ckpt: exit %d, %s", code, stderr)
	}
	for _, want := range []string{"imported ONNX sha256", "parameterisation       v", "x [1 8 8] per point, time t = 999·t, vp schedule, class y"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dfx ckpt does not say %q:\n%s", want, stdout)
		}
	}
	// Run again: dfx import replaces its own output, and nothing else.
	if code, _, stderr := runCLI("import", filepath.Join(onnxFixtures, "mlp.onnx"), "-param", "eps", "-schedule", "ve", "-time", "sigma", "-out", out); code != 0 {
		t.Errorf("replacing its own checkpoint: exit %d, %s", code, stderr)
	}
}

// dfx nll reads an imported network like any other: every trace runs on
// it, Hutch++ with a sketch as wide as d = 8 (24 products) is the exact
// trace, and points of another dimension are refused.
func TestNLLRunsOnAnImportedNetwork(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "mlp.dfxckpt")
	if code, _, stderr := runCLI("import", filepath.Join(onnxFixtures, "mlp.onnx"), "-param", "eps", "-schedule", "ve", "-time", "sigma",
		"-out", ckpt); code != 0 {
		t.Fatalf("import: %s", stderr)
	}
	points := writeTemp(t, "x.csv", "0.5,-1,0.25,0,1,-0.5,0.1,2\n-1,0.5,0,0.75,-0.25,1,0.3,-2\n")
	exact := runNLLJSON(t, "--checkpoint", ckpt, "--points", points, "--trace", "vjp", "--s", "0.1", "--rtol", "1e-3", "--atol", "1e-3")
	hutch := runNLLJSON(t, "--checkpoint", ckpt, "--points", points, "--trace", "hutchpp:24", "--s", "0.1", "--rtol", "1e-3", "--atol", "1e-3")
	wide := writeTemp(t, "wide.csv", "1,2,3,4,5,6,7,8,9\n")
	if code, stdout, stderr := runCLI("nll", "--checkpoint", ckpt, "--points", wide); code != 2 || stdout != "" ||
		!strings.Contains(stderr, "takes points of dimension 8, the data are of dimension 9") {
		t.Errorf("points of another dimension: exit %d, stderr %q", code, stderr)
	}
	for i, p := range exact.Points {
		q := hutch.Points[i]
		if math.IsNaN(p.NLL) || math.IsInf(p.NLL, 0) || p.NFE == 0 || math.Abs(p.NLL-q.NLL) > 1e-4*(1+math.Abs(p.NLL)) {
			t.Errorf("point %d: nll %g (exact trace) and %g (Hutch++), %d evaluations", i, p.NLL, q.NLL, p.NFE)
		}
	}
}

// dfx sample -checkpoint draws (classifier-free guided) samples from an
// imported MNIST-shaped network, plain, with adjoint guidance and with
// density guidance, and refuses one of another shape or a trace whose
// network is not given.
func TestSampleRunsOnAnImportedNetwork(t *testing.T) {
	dir := t.TempDir()
	u28, u8 := filepath.Join(dir, "u28.dfxckpt"), filepath.Join(dir, "u8.dfxckpt")
	for _, args := range [][]string{
		{filepath.Join(onnxFixtures, "unet28.onnx"), "-classes", "10", "-out", u28},
		{filepath.Join(onnxFixtures, "unet.onnx"), "-classes", "4", "-out", u8},
	} {
		full := append([]string{"import", args[0], "-param", "eps", "-schedule", "vp", "-time-scale", "999", "-class-input", "y"}, args[1:]...)
		if code, _, stderr := runCLI(full...); code != 0 {
			t.Fatalf("import: %s", stderr)
		}
	}
	npy := filepath.Join(dir, "s.npy")
	if code, _, stderr := runCLI("sample", "-checkpoint", u28, "-class", "3,7", "-n", "2", "-steps", "3", "-npy", npy); code != 0 {
		t.Fatalf("sample: exit %d: %s", code, stderr)
	}
	if st, err := os.Stat(npy); err != nil || st.Size() < 4*784*4 {
		t.Errorf("samples: %v", err)
	}
	for i, guided := range [][]string{
		{"-guide", "centring", "-operator", "vjp", "-class", "3", "-steps", "4", "-window", "1:2", "-inner", "2"},
		{"-guide", "class", "-operator", "dfea", "-class", "3", "-steps", "4", "-window", "1:2", "-inner", "2"},
		{"-density", "offset:1", "-trace", "hutchinson:2", "-steps", "2"},
	} {
		out := filepath.Join(dir, fmt.Sprintf("guided%d.npy", i))
		args := append([]string{"sample", "-checkpoint", u28, "-n", "1", "-npy", out}, guided...)
		if code, _, stderr := runCLI(args...); code != 0 {
			t.Errorf("%v: exit %d: %s", guided, code, stderr)
		} else if st, err := os.Stat(out); err != nil || st.Size() < 784*4 {
			t.Errorf("%v: samples: %v", guided, err)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", u8}, "takes points of dimension 64, the data are of dimension 784"},
		{[]string{"-checkpoint", u28, "-model", "eps"}, "give one"},
		{[]string{"-checkpoint", u28, "-checkpoint", u28}, "both hold the score network"},
		{[]string{"-checkpoint", u28, "-nets", dir}, "-nets with -checkpoint"},
		{[]string{"-checkpoint", u28, "-density", "offset:1"}, "-trace df-tm-c needs the nu network"},
	} {
		args := append([]string{"sample", "-n", "1", "-steps", "2", "-npy", filepath.Join(dir, "x.npy")}, tc.args...)
		if code, stdout, stderr := runCLI(args...); code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
}
