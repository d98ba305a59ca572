package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Checks before work: inputs that a command can judge from its flags, its
// environment or the headers of its data are refused before anything is
// loaded or computed (exit 2, one line on stderr, nothing on stdout), and a
// flag that an option would ignore is refused, not dropped.

// brokenMNIST is a DFX_MNIST_DIR of 30 training and 30 test images, all of
// class 0, whose training pixels are cut short: its headers and labels read
// well, and loading the set fails ("malformed IDX"). A check that answers
// with its own message on it ran before the data were loaded.
func brokenMNIST(t *testing.T) string { return mnistDir(t, 28, 30, 30, 100, false) }

func TestChecksComeBeforeWork(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "s.png")
	out := filepath.Join(dir, "g.dfxckpt")
	broken := brokenMNIST(t)
	x := writeTemp(t, "x.csv", "0.3,0.4\n")
	gp, _ := gmm2.files(t)
	gck := gmm2.checkpoint(t)
	guide := []string{"sample", "-class", "3", "-n", "1", "-png", png, "-guide", "class"}
	density := []string{"sample", "-n", "1", "-png", png, "-density", "offset:1"}
	shard := func(v string) []string {
		return []string{"DFX_MNIST_DENSITY_SHARD=" + v, "DFX_MNIST_DENSITY_WORK=" + t.TempDir(), "DFX_MNIST_DIR=" + broken}
	}
	otRun := []string{"ot", "--preset", "paper-affine", "--steps", "2", "--chains", "1"}
	cases := []struct {
		name string
		args []string
		env  []string // KEY=VALUE
		want string
		not  string // a wrong diagnosis the message must not give
	}{
		// dfx fit: the data set's sizes and the backend, before the data load
		{"fit -test past the test set", []string{"fit", "-components", "1", "-test", "1000", "-out", out}, []string{"DFX_MNIST_DIR=" + broken},
			"-test 1000: the test set in DFX_MNIST_DIR=" + broken + " holds 30 images", ""},
		{"fit more components than a class", []string{"fit", "-components", "31", "-out", out}, []string{"DFX_MNIST_DIR=" + broken},
			"class 0 of the training set in DFX_MNIST_DIR=" + broken + " has 30 images", ""},
		{"fit more components than the set", []string{"fit", "-components", "31", "-per-class=false", "-out", out}, []string{"DFX_MNIST_DIR=" + broken},
			"holds 30 images, fewer than the components", ""},
		{"fit more components than MNIST's class", []string{"fit", "-components", "7000", "-out", out}, []string{"DFX_MNIST_DIR=" + broken},
			"fewer than the components", ""},
		{"fit backend bogus", []string{"fit", "-components", "1", "-out", out}, []string{"DFX_MNIST_DIR=" + broken, "GOMLX_BACKEND=bogus"},
			`GOMLX_BACKEND="bogus"`, ""},
		// a bad backend is the environment's fault, not the checkpoint's
		{"ckpt backend bogus", []string{"ckpt", "../../mnist/checkpoints/eps.dfxckpt"}, []string{"GOMLX_BACKEND=bogus"}, `GOMLX_BACKEND="bogus"`, "bad checkpoint"},
		{"nll gmm checkpoint backend bogus", []string{"nll", "--gmm", gck, "--points", x, "--schedule", "vp", "--exact"}, []string{"GOMLX_BACKEND=bogus"},
			`GOMLX_BACKEND="bogus"`, "bad checkpoint"},
		// flags an option ignores
		{"nll exact with batch", []string{"nll", "--gmm", gp, "--points", x, "--schedule", "vp", "--exact", "--batch", "1"}, nil,
			"--batch has no effect with --exact", ""},
		{"sample hutchpp for density guidance", cat(density, "-trace", "hutchpp:3"), nil, "Hutch++", ""},
		{"ot published rk4", []string{"ot", "--protocol", "published", "--preset", "published-affine", "--solver", "rk4", "--steps", "10", "--chains", "1"}, nil,
			"evaluates between the grid's times", ""},
		// guidance that would act on no step
		{"sample empty window", cat(guide, "-window", "5:5"), nil, "--window 5:5 guides no step", ""},
		{"sample one step, empty default window", cat(guide, "-steps", "1"), nil, "default guidance window", ""},
		// environment variables: the documented values or exit 2
		{"shard with a plus sign", []string{"reproduce", "mnist-density"}, shard("+1/2"), "want k/n", ""},
		{"shard with a plus sign in n", []string{"reproduce", "mnist-density"}, shard("1/+2"), "want k/n", ""},
		{"shard with spaces", []string{"reproduce", "mnist-density"}, shard(" 1/2"), "want k/n", ""},
		{"DFX_TRACEBACK yes", otRun, []string{"DFX_TRACEBACK=yes"}, `DFX_TRACEBACK="yes", want 1, 0 or unset`, ""},
		{"DFX_MNIST_NETS under sample", []string{"sample", "-class", "3", "-n", "1", "-steps", "1", "-png", png},
			[]string{"DFX_MNIST_NETS=" + filepath.Join(dir, "none")}, "DFX_MNIST_NETS=" + filepath.Join(dir, "none") + " is not a folder", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, stdout, stderr := runCLI(c.args...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, one line", c.args, code, stdout, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("%v: stderr %q does not say %q", c.args, stderr, c.want)
			}
			if c.not != "" && strings.Contains(stderr, c.not) {
				t.Errorf("%v: stderr %q says %q", c.args, stderr, c.not)
			}
		})
	}
	for _, p := range []string{png, out} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused run wrote %s", p)
		}
	}
}

// TestFitOfOneTestImageReportsNoSE: -test 1 is in its documented range; a
// standard error of one image is undefined, so the fit says so and its
// record leaves the SE out, instead of failing on a NaN in JSON.
func TestFitOfOneTestImageReportsNoSE(t *testing.T) {
	t.Setenv("DFX_MNIST_DIR", mnistDir(t, 28, 4, 4, 0, false))
	out := filepath.Join(t.TempDir(), "g.dfxckpt")
	code, stdout, stderr := runCLI("fit", "-components", "1", "-per-class=false", "-rank", "2", "-iters", "1", "-test", "1", "-out", out)
	if code != 0 || !strings.Contains(stdout, "on 1 dequantised test image (exact; no SE from one image)") || strings.Contains(stdout, "NaN") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("ckpt", "--json", out)
	if code != 0 {
		t.Fatalf("ckpt: exit %d, %s", code, stderr)
	}
	var rep struct{ Config map[string]any }
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Config["TestSE"]; ok || rep.Config["TestImages"] != 1.0 || rep.Config["TestBPD"] == nil {
		t.Errorf("the fit's record %v: want TestImages 1, a TestBPD and no TestSE", rep.Config)
	}
}

// TestFitUsageShowsItsDefaults: every [-flag value] of fit's usage line and
// of its line in dfx's command list is the flag's real default, as -h's
// flag list prints it.
func TestFitUsageShowsItsDefaults(t *testing.T) {
	code, _, help := runCLI("fit", "-h")
	if code != 0 {
		t.Fatalf("fit -h: exit %d", code)
	}
	defaults := map[string]string{} // from -h's list: "  -name [type]" then its usage, "(default v)" unless zero
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if !strings.HasPrefix(l, "  -") || len(f) > 2 || i+1 == len(lines) {
			continue
		}
		name, zero := strings.TrimPrefix(f[0], "-"), "false"
		if len(f) == 2 {
			zero = "0"
		}
		defaults[name] = zero
		if m := regexp.MustCompile(`\(default ([^)]*)\)$`).FindStringSubmatch(lines[i+1]); m != nil {
			defaults[name] = m[1]
		}
	}
	_, _, list := runCLI("help")
	usage, _, _ := strings.Cut(help, "\n")
	var fitLine string
	for _, l := range strings.Split(list, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "fit ") {
			fitLine = l
		}
	}
	shown := regexp.MustCompile(`\[-([a-z-]+)[ =]([^\]\s]+)\]`)
	n := 0
	for _, text := range []string{usage, fitLine} {
		for _, m := range shown.FindAllStringSubmatch(text, -1) {
			n++
			if d, ok := defaults[m[1]]; !ok || d != m[2] {
				t.Errorf("%q shows -%s %s, its default is %q", text, m[1], m[2], d)
			}
		}
	}
	if n < 5 {
		t.Fatalf("read %d defaults from %q and %q", n, usage, fitLine)
	}
}

// TestSampleAndNLLTakeTheSameTraceSpellings: every spelling of a trace that
// dfx nll accepts, canonical or alias, passes dfx sample's flag check too
// (the two share one parser), and the other way round; the runs stop later,
// at a network folder without networks.
func TestSampleAndNLLTakeTheSameTraceSpellings(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	x := writeTemp(t, "x.csv", "0.3,0.4\n")
	score := "../../toys/checkpoints/checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt"
	for _, tr := range []string{"dftm", "df-tm", "DF-TM", "dftm-c", "df-tm-c", "dftmc", "hutchinson:2", "skip-hutchinson:2"} {
		t.Run(tr, func(t *testing.T) {
			_, _, e := runCLI("sample", "-n", "1", "-png", filepath.Join(dir, "s.png"), "-nets", empty, "-density", "offset:1", "-trace", tr)
			if !strings.Contains(e, "has no eps network") {
				t.Errorf("sample -trace %s: %q, want its flags accepted (and the empty -nets refused)", tr, e)
			}
			_, _, e = runCLI("nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", tr, "--solver", "euler", "--steps", "1")
			if strings.Contains(e, "unknown --trace") {
				t.Errorf("nll --trace %s: %q", tr, e)
			}
		})
	}
}

// TestSampleNetsFlagBeatsDFXMNISTNets: DFX_MNIST_NETS is -nets' default,
// and an explicit -nets wins over it.
func TestSampleNetsFlagBeatsDFXMNISTNets(t *testing.T) {
	t.Setenv("DFX_MNIST_NETS", filepath.Join(t.TempDir(), "none"))
	nets := copyNets(t, "", nil)
	npy := filepath.Join(t.TempDir(), "s.npy")
	code, stdout, stderr := runCLI("sample", "-class", "3", "-n", "1", "-steps", "1", "-npy", npy, "-nets", nets)
	if code != 0 || stdout != npy+"\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
