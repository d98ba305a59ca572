package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/mnist"
)

// fileState is what a test remembers of a path: its mode and content (or
// that nothing is there), to check a refused command left it alone.
type fileState struct {
	exists bool
	mode   fs.FileMode
	data   []byte
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	st, err := os.Lstat(p)
	if err != nil {
		return fileState{}
	}
	s := fileState{exists: true, mode: st.Mode()}
	if st.Mode().IsRegular() {
		s.data, _ = os.ReadFile(p)
	}
	return s
}

func (s fileState) same(o fileState) bool {
	return s.exists == o.exists && s.mode == o.mode && bytes.Equal(s.data, o.data)
}

// TestOutputsDfxDidNotWriteAreNeverTouched: every command that writes a
// file refuses, before any work (exit 2, one line on stderr, nothing on
// stdout), a target that dfx did not write as the same kind of output, and
// leaves it exactly as it was; a refused train creates no -out folder.
func TestOutputsDfxDidNotWriteAreNeverTouched(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notes := file("notes.txt", "a user's notes")
	userNPY := file("user.npy", "\x93NUMPY\x01\x00\x46\x00{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }                \n")
	link := filepath.Join(dir, "link.png")
	if err := os.Symlink(notes, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	committedNet, _ := os.ReadFile("../../mnist/checkpoints/classifier.dfxckpt")
	userNet := file("mine/net.dfxckpt", string(committedNet))
	userTrain := file("trainout/classifier.dfxckpt", string(committedNet))
	dev := filepath.Join(dir, "null") // a device node like /dev/null, which a regression would replace
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		dev = fifo // not root: a FIFO stands in
	}
	sample := []string{"sample", "-class", "3", "-n", "1", "-steps", "1"}
	committedNPY := committedOutput(t, dir)
	file("module/go.mod", "module example.com/m\n")
	file("module/pkg/code.go", "package pkg\n")
	testdata := filepath.Join(dir, "module", "pkg", "testdata")
	os.MkdirAll(testdata, 0o755)
	newFolder := filepath.Join(dir, "new", "nets")
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		keep  string // a path that must not change
		want  string // in the message
		after string // a path that must not exist afterwards
	}{
		{"sample -png over a user's file", cat(sample, "-png", notes), nil, notes, "did not write it", ""},
		{"sample -npy over a user's .npy", cat(sample, "-npy", userNPY), nil, userNPY, "without dfx's mark", ""},
		{"sample -npy over a committed file", cat(sample, "-npy", "../../examples/V.csv"), nil, "../../examples/V.csv", "", ""},
		{"sample -npy over a committed file dfx wrote", cat(sample, "-npy", committedNPY), nil, committedNPY, "tracked by git", ""},
		{"sample -png through a symbolic link", cat(sample, "-png", link), nil, link, "symbolic link", ""},
		{"sample -npy into a FIFO", cat(sample, "-npy", fifo), nil, fifo, "FIFO", ""},
		{"sample -npy over a device node", cat(sample, "-npy", dev), nil, dev, "", ""},
		{"sample -png to standard output", cat(sample, "-png", "-"), nil, "-", "standard output", "-"},
		{"sample -npy into a package's source folder", cat(sample, "-npy", "samples.npy"), nil, "samples.npy", "Go source", "samples.npy"},
		{"sample -npy into a package's test data", cat(sample, "-npy", filepath.Join(testdata, "s.npy")), nil, "", "test data", filepath.Join(testdata, "s.npy")},
		{"fit -out over a user's network", []string{"fit", "-out", userNet}, nil, userNet, "not written by dfx fit", ""},
		{"fit -out over a committed network", []string{"fit", "-out", "../../mnist/checkpoints/classifier.dfxckpt"}, nil,
			"../../mnist/checkpoints/classifier.dfxckpt", "tracked by git", ""},
		{"train -out over a user's file of the network's name", []string{"train", "classifier", "-out", filepath.Dir(userTrain)}, nil,
			userTrain, "not written by dfx train classifier", ""},
		{"train -out into the committed checkpoints", []string{"train", "classifier", "-out", "../../mnist/checkpoints"}, nil,
			"../../mnist/checkpoints/classifier.dfxckpt", "tracked by git", ""},
		{"train -resume with no state creates no folder", []string{"train", "classifier", "-resume", "-out", newFolder}, nil, "", "no saved state", newFolder},
		{"train dftm without eps creates no folder", []string{"train", "dftm", "-out", newFolder}, nil, "", "eps", newFolder},
		{"train with a bad data folder creates no folder", []string{"train", "classifier", "-out", newFolder},
			map[string]string{"DFX_MNIST_DIR": filepath.Join(dir, "nodata")}, "", "DFX_MNIST_DIR", newFolder},
		{"train with a bad backend creates no folder", []string{"train", "classifier", "-out", newFolder},
			map[string]string{"GOMLX_BACKEND": "bogus"}, "", "GOMLX_BACKEND", newFolder},
		{"reproduce -out into a package's test data", []string{"reproduce", "-quick", "-out", filepath.Join(testdata, "figs"), "fields"}, nil,
			"", "test data", filepath.Join(testdata, "figs")},
		{"a work folder in a package's test data", []string{"reproduce", "-quick", "-out", newFolder, "mnist-model"},
			map[string]string{"DFX_MNIST_MODEL_WORK": filepath.Join(testdata, "work")}, "", "test data", filepath.Join(testdata, "work")},
		{"reproduce mnist-model with missing networks claims no folder", []string{"reproduce", "-quick", "-out", newFolder, "mnist-model"},
			map[string]string{"DFX_MNIST_NETS": filepath.Join(dir, "nonexistent")}, "", "eps", newFolder},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			var before fileState
			if c.keep != "" {
				before = stateOf(t, c.keep)
			}
			code, out, errOut := runCLI(c.args...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, one line saying %q, nothing on stdout", code, out, errOut, c.want)
			}
			if c.keep != "" && !stateOf(t, c.keep).same(before) {
				t.Errorf("%s changed", c.keep)
			}
			if c.after != "" {
				if _, err := os.Lstat(c.after); err == nil {
					t.Errorf("%s exists after a refused command", c.after)
				}
			}
		})
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "new")); len(ents) != 0 {
		t.Errorf("refused commands left %d entries in new/", len(ents))
	}
}

// TestSampleReplacesItsOwnOutputs: a second dfx sample into the same -png
// and -npy replaces them (each carries dfx's mark), and a PNG or .npy
// written by dfx is recognised as its own.
func TestSampleReplacesItsOwnOutputs(t *testing.T) {
	dir := t.TempDir()
	png, npy := filepath.Join(dir, "s.png"), filepath.Join(dir, "s.npy")
	for i := range 2 {
		code, out, errOut := runCLI("sample", "-class", "3", "-n", "1", "-steps", "1", "-png", png, "-npy", npy)
		if code != 0 || out != npy+"\n"+png+"\n" {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q", i+1, code, out, errOut)
		}
	}
	if err := outfile.PNGOwned(png); err != nil {
		t.Error(err)
	}
	if err := outfile.NPYOwned(npy); err != nil {
		t.Error(err)
	}
}

// committedOutput makes a .npy that dfx wrote (it carries dfx's mark) and
// that git tracks, in a new repository under dir, and returns its path.
func committedOutput(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(repo, 0o755)
	var npy bytes.Buffer
	if err := input.WriteNPY(&npy, mat.NewDense(1, 2, []float64{0.5, -0.5})); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(repo, "samples.npy")
	if err := os.WriteFile(p, npy.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "samples.npy"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := outfile.NPYOwned(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTrainForceReplacesAnyStateFile: -force starts afresh over whatever
// regular file holds the state's name (a corrupt or foreign one too), and
// -resume refuses such a file, naming it.
func TestTrainForceReplacesAnyStateFile(t *testing.T) {
	spec, err := mnist.SpecByName("classifier")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(mnist.StatePath(dir, spec.Name), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := preflightTrain(spec, dir, false, true); err != nil {
		t.Errorf("-force over a corrupt state: %v", err)
	}
	if err := preflightTrain(spec, dir, true, false); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("-resume from a corrupt state: %v, want a refusal naming -resume", err)
	}
}
