package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/input"
)

// idxGz writes an IDX stream (magic, dimensions, data) gzipped to path.
func idxGz(t *testing.T, path string, magic uint32, dims []uint32, data []byte, truncate int) {
	t.Helper()
	var raw bytes.Buffer
	binary.Write(&raw, binary.BigEndian, magic)
	binary.Write(&raw, binary.BigEndian, dims)
	raw.Write(data)
	b := raw.Bytes()
	if truncate > 0 {
		b = b[:len(b)-truncate]
	}
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(b)
	w.Close()
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mnistDir makes a DFX_MNIST_DIR of n images of side×side pixels per split
// with nl labels; breakImages truncates the training images by that many
// bytes, badMagic writes a label file's magic into the image file.
func mnistDir(t *testing.T, side uint32, n, nl, truncate int, badMagic bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, split := range []string{"train", "t10k"} {
		magic := uint32(0x803)
		if badMagic {
			magic = 0x801
		}
		tr := 0
		if split == "train" {
			tr = truncate
		}
		idxGz(t, filepath.Join(dir, split+"-images-idx3-ubyte.gz"), magic, []uint32{uint32(n), side, side}, make([]byte, n*int(side*side)), tr)
		idxGz(t, filepath.Join(dir, split+"-labels-idx1-ubyte.gz"), 0x801, []uint32{uint32(nl)}, make([]byte, nl), 0)
	}
	return dir
}

// copyNets copies the committed MNIST networks into a new folder and
// applies damage to the named file's bytes.
func copyNets(t *testing.T, name string, damage func([]byte) []byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"eps", "dftm", "dftm-c", "classifier"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "mnist", "checkpoints", n+".dfxckpt"))
		if err != nil {
			t.Fatal(err)
		}
		if n == name {
			raw = damage(raw)
		}
		if err := os.WriteFile(filepath.Join(dir, n+".dfxckpt"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestTrustBadInputIsOneLineExitTwoBeforeAnyWork: the inputs a user hands
// the CLI (environment variables, data folders, checkpoints, output paths)
// each exit 2 with one line on stderr and nothing on stdout, found before any
// long work starts, and never through a stack trace or a fallback to the
// compiled-in networks.
func TestTrustBadInputIsOneLineExitTwoBeforeAnyWork(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sub := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	png := filepath.Join(dir, "s.png")
	sp := []string{"sample", "-class", "3", "-n", "1", "-steps", "1", "-png", png}
	x := file("x.csv", "0.3,0.4\n")
	var npy bytes.Buffer
	if err := input.WriteNPY(&npy, mat.NewDense(1, 2, []float64{0.3, 0.4})); err != nil {
		t.Fatal(err)
	}
	xnpy := file("x.npy", npy.String())
	big := file("big.csv", "1e300,0\n0,0\n")
	gmmBig := file("big.json", `{"means":[[1e300,0]],"covs":[[[1,0],[0,1]]]}`)
	score := "../../toys/checkpoints/checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt"
	dftmCk := "../../toys/checkpoints/checkerboard-n5000-d1-ve-df-tm-w64x3-s8000-seed1.dfxckpt"
	empty := sub("empty")
	corruptState := sub("corruptstate")
	file("corruptstate/_eps.state.dfxckpt", "not a checkpoint")
	wrongState := sub("wrongstate") // a weights checkpoint where a training state should be
	raw, _ := os.ReadFile("../../mnist/checkpoints/dftm.dfxckpt")
	file("wrongstate/_dftm.state.dfxckpt", string(raw))
	stale := sub("stale")
	file("stale/_classifier.state.dfxckpt", "an earlier run's state")
	flipped := copyNets(t, "eps", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b })
	truncated := copyNets(t, "classifier", func(b []byte) []byte { return b[:len(b)/3] })
	foreign := sub("foreign")
	file("foreign/INDEX.md", "my own index")
	owned := sub("owned")
	file("owned/.dfx-output", "# written by dfx: it replaces the files listed below when it writes here again, and writes only into folders that hold this file (or are empty)\n# a parent folder: dfx writes its index file and output folders here, and touches nothing else\n")
	sub("owned/fields")
	file("owned/fields/notes.txt", "mine")
	trainC := []string{"train", "classifier", "-steps", "1", "-out", sub("trainout")}
	cases := []struct {
		name string
		args []string
		env  []string // KEY=VALUE
		want string
	}{
		// backends
		{"backend bogus sample", sp, []string{"GOMLX_BACKEND=bogus"}, `this build has no backend "bogus"`},
		{"backend xla without the tag", sp, []string{"GOMLX_BACKEND=xla:cuda"}, "-tags xla"},
		{"backend go:nonsense sample", sp, []string{"GOMLX_BACKEND=go:nonsense"}, `unknown configuration option "nonsense"`},
		{"backend bogus train", trainC, []string{"GOMLX_BACKEND=bogus"}, "GOMLX_BACKEND"},
		{"backend bogus reproduce", []string{"reproduce", "-quick", "-out", filepath.Join(dir, "r1"), "fields"}, []string{"GOMLX_BACKEND=bogus"}, "GOMLX_BACKEND"},
		{"backend bogus nll", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve"}, []string{"GOMLX_BACKEND=bogus"}, "GOMLX_BACKEND"},
		// DFX_MNIST_DIR
		{"mnist dir missing", trainC, []string{"DFX_MNIST_DIR=" + filepath.Join(dir, "none")}, "not a folder"},
		{"mnist dir empty", trainC, []string{"DFX_MNIST_DIR=" + empty}, "no such file"},
		{"mnist dir 32×32", trainC, []string{"DFX_MNIST_DIR=" + mnistDir(t, 32, 2, 2, 0, false)}, "want 28×28"},
		{"mnist dir truncated", trainC, []string{"DFX_MNIST_DIR=" + mnistDir(t, 28, 2, 2, 100, false)}, "malformed IDX"},
		{"mnist dir wrong magic", trainC, []string{"DFX_MNIST_DIR=" + mnistDir(t, 28, 2, 2, 0, true)}, "magic"},
		{"mnist dir label count", trainC, []string{"DFX_MNIST_DIR=" + mnistDir(t, 28, 2, 3, 0, false)}, "3 labels for 2 images"},
		{"mnist dir reproduce", []string{"reproduce", "-quick", "-out", filepath.Join(dir, "r2"), "mnist"}, []string{"DFX_MNIST_DIR=" + mnistDir(t, 32, 2, 2, 0, false)}, "want 28×28"},
		// networks: no fallback to the compiled-in ones
		{"sample nets empty folder", cat(sp, "-nets", empty), nil, "has no eps network"},
		{"sample nets flipped byte", cat(sp, "-nets", flipped), nil, "--nets"},
		{"sample nets truncated", cat(sp, "-steps", "10", "-guide", "class", "-nets", truncated), nil, "--nets"}, // guidance reads the classifier
		{"sample model not an ε-network", cat(sp, "-model", "dftm"), nil, "not an ε-network"},
		{"sample model with guidance", cat(sp, "-model", "eps-gmm-patch", "-guide", "class"), nil, "plain sampling"},
		{"DFX_MNIST_NETS missing", []string{"reproduce", "-quick", "-out", filepath.Join(dir, "r3"), "mnist"}, []string{"DFX_MNIST_NETS=" + filepath.Join(dir, "none")}, "DFX_MNIST_NETS"},
		{"DFX_MNIST_NETS empty", []string{"reproduce", "-quick", "-out", filepath.Join(dir, "r4"), "adjoint"}, []string{"DFX_MNIST_NETS=" + empty}, "has no eps network"},
		{"train dftm-c without eps", []string{"train", "dftm-c", "-steps", "1", "-out", empty}, nil, "trains against the eps network"},
		// training state
		{"train resume corrupt", []string{"train", "eps", "-resume", "-out", corruptState}, nil, "-resume"},
		{"train resume a weights file", []string{"train", "dftm", "-resume", "-out", wrongState}, nil, "not the training state of dftm"},
		{"train state without resume", []string{"train", "classifier", "-steps", "1", "-out", stale}, nil, "-resume, or replace it with -force"},
		{"train resume and force", []string{"train", "classifier", "-resume", "-force", "-out", stale}, nil, "exclude each other"},
		{"train out root", []string{"train", "eps", "-out", "/"}, nil, "root"},
		{"train out source folder", []string{"train", "eps", "-out", "."}, nil, "source folder"},
		{"DFX_RETRAIN yes", []string{"reproduce", "-quick", "-out", filepath.Join(dir, "r5"), "toys"}, []string{"DFX_RETRAIN=yes"}, "DFX_RETRAIN"},
		// -out of reproduce
		{"reproduce out root", []string{"reproduce", "-quick", "-out", "/", "fields"}, nil, "root"},
		{"reproduce out source folder", []string{"reproduce", "-quick", "-out", ".", "ot"}, nil, "source folder"},
		{"reproduce out repository", []string{"reproduce", "-quick", "-out", "../..", "ot"}, nil, "source folder"},
		{"reproduce out foreign files", []string{"reproduce", "-quick", "-out", foreign, "fields"}, nil, "files dfx did not write"},
		{"reproduce experiment folder with a user's file", []string{"reproduce", "-quick", "-out", owned, "fields"}, nil, "notes.txt"},
		// dfx sample outputs
		{"sample png a folder", []string{"sample", "-class", "3", "-n", "1", "-png", dir}, nil, "is a folder"},
		{"sample npy a folder", []string{"sample", "-class", "3", "-n", "1", "-npy", dir}, nil, "is a folder"},
		{"sample png = npy", []string{"sample", "-class", "3", "-n", "1", "-png", png, "-npy", filepath.Join(dir, ".", "s.png")}, nil, "the same file"},
		// silently ignored input
		{"nll header with npy", []string{"nll", "--checkpoint", score, "--points", xnpy, "--schedule", "ve", "--header"}, nil, "--header applies to CSV"},
		{"nll unused checkpoint", []string{"nll", "--checkpoint", score, "--checkpoint", dftmCk, "--points", x, "--schedule", "ve", "--trace", "vjp"}, nil, "does not use"},
		// numerics
		{"analytic 1e300 data", []string{"analytic", "--data", big, "--points", x, "--schedule", "ve", "--t", "0.5"}, nil, "too large for float64"},
		{"nll gmm 1e300 mean", []string{"nll", "--gmm", gmmBig, "--points", x, "--schedule", "vp"}, nil, "too large for float64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(c.args...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, one line", c.args, code, out, errOut)
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("%v: stderr %q does not say %q", c.args, errOut, c.want)
			}
		})
	}
	if _, err := os.Stat(png); err == nil {
		t.Errorf("a refused run wrote %s", png)
	}
	if b, _ := os.ReadFile(filepath.Join(foreign, "INDEX.md")); string(b) != "my own index" {
		t.Errorf("a user's INDEX.md was changed: %q", b)
	}
}

func cat(a []string, b ...string) []string { return append(append([]string{}, a...), b...) }

// TestAPanicReachesTheUserAsOneLine: the last resort of the command line
// turns a panic into one line and exit 1, with no stack trace.
func TestAPanicReachesTheUserAsOneLine(t *testing.T) {
	commands["panics"] = command{"test", func(context.Context, []string, io.Writer, io.Writer) int { panic("boom") }}
	defer delete(commands, "panics")
	code, out, errOut := runCLI("panics")
	if code != 1 || out != "" || errOut != "dfx panics: internal error: boom (rerun with DFX_TRACEBACK=1 for the trace, and report it)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestReproduceRewritesOnlyItsOwnOutputs: a second run into the same -out
// replaces the experiment's folder (dfx's marker lists its files); a
// user's file beside the outputs in -out is kept, and one inside the
// experiment's folder makes the run refuse (exit 2) and stay untouched.
func TestReproduceRewritesOnlyItsOwnOutputs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "figs")
	for range 2 {
		if code, _, errOut := runCLI("reproduce", "-quick", "-out", out, "fields"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		os.WriteFile(filepath.Join(out, "mine.txt"), []byte("mine"), 0o644)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "mine.txt")); string(b) != "mine" {
		t.Fatal("a user's file beside the outputs was touched")
	}
	inside := filepath.Join(out, "fields", "mine.txt")
	os.WriteFile(inside, []byte("mine"), 0o644)
	if code, _, errOut := runCLI("reproduce", "-quick", "-out", out, "fields"); code != 2 || !strings.Contains(errOut, "mine.txt") {
		t.Fatalf("exit %d, stderr %q; want 2 naming mine.txt", code, errOut)
	}
	if b, _ := os.ReadFile(inside); string(b) != "mine" {
		t.Fatal("a user's file in an experiment's folder was touched")
	}
}

// TestSampleWritesNeitherFileWhenOneFails: the .npy is not left behind (or
// reported) when the PNG cannot be written.
func TestSampleWritesNeitherFileWhenOneFails(t *testing.T) {
	dir := t.TempDir()
	npyPath := filepath.Join(dir, "s.npy")
	x := mat.NewDense(1, 784, nil)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	err := writeSamples(x, classGrid([]int{3}, 1, 1, 3, 1, nil), filepath.Join(plain, "s.png"), npyPath) // a file as the PNG's folder
	if err == nil {
		t.Fatal("a PNG under a file was written")
	}
	if _, statErr := os.Stat(npyPath); statErr == nil {
		t.Fatalf("the .npy was left behind after %v", err)
	}
}
