package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/mnist"
)

// TestEveryBadInputIsOneLineExitTwoNothingOnStdout runs every command with
// inputs a new user got wrong: each must exit 2, print nothing on stdout
// and exactly one line on stderr (never the usage text, a goroutine dump or
// a partial result).
func TestEveryBadInputIsOneLineExitTwoNothingOnStdout(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	y := file("y.csv", "0,0\n1,0\n")
	x := file("x.csv", "0.3,0.4\n")
	wide := file("wide.csv", strings.TrimSuffix(strings.Repeat("0.5,", 100000), ",")+"\n") // d = 100 000
	badFirst := file("badfirst.csv", "0.5,abc\n1,2\n")
	bomHeader := file("bom.csv", "\xef\xbb\xbfx,y\n1,2\n")
	emptyField := file("empty.csv", "0,,0\n")
	aFile := file("plain", "x")
	committedEps := filepath.Join("..", "..", "mnist", "checkpoints", "eps.dfxckpt")
	exampleUNet := filepath.Join("..", "..", "examples", "mnist-unet", "unet.dfxckpt")
	toyScore := toyNet(t, "score")
	rq := []string{"reproduce", "-quick", "-out", filepath.Join(dir, "reproduced")}
	an := []string{"analytic", "--data", y, "--points", x}
	ve := append(append([]string{}, an...), "--schedule", "ve", "--t", "0.5")
	vp := append(append([]string{}, an...), "--schedule", "vp", "--t", "0.5")
	cat := func(a []string, b ...string) []string { return append(append([]string{}, a...), b...) }
	gmm := file("g.json", `{"weights":[1,2],"means":[[0,0],[1,0]],"covs":[[[1,0],[0,1]],[[0.5,0.1],[0.1,0.5]]]}`)
	gmmAsym := file("asym.json", `{"means":[[0,0]],"covs":[[[1,0.2],[0.1,1]]]}`)
	gmmNeg := file("neg.json", `{"means":[[0,0]],"covs":[[[1,2],[2,1]]]}`)
	gmmW := file("w.json", `{"weights":[-1],"means":[[0,0]],"covs":[[[1,0],[0,1]]]}`)
	gmmRag := file("rag.json", `{"means":[[0,0]],"covs":[[[1,0],[0]]]}`)
	gmmBad := file("bad.json", `{"mean":[[0,0]]}`)
	gmmHuge := file("huge.json", `{"means":[[1e999,0]],"covs":[[[1,0],[0,1]]]}`)
	x5 := file("x5.csv", "1,2,3,4,5\n")
	score := "../../toys/checkpoints/checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt"
	dftmCk := "../../toys/checkpoints/checkerboard-n5000-d1-ve-df-tm-w64x3-s8000-seed1.dfxckpt"
	nl := []string{"nll", "--gmm", gmm, "--points", x, "--schedule", "vp"}
	sp := []string{"sample", "-class", "3", "-n", "1", "-png", filepath.Join(dir, "s.png")}
	ref := file("ref.csv", strings.TrimSuffix(strings.Repeat("-0.5,", 784), ",")+"\n")      // one image in [−1, 1]
	bright := file("bright.csv", strings.TrimSuffix(strings.Repeat("255,", 784), ",")+"\n") // pixels 0…255, not [−1, 1]
	badIDX := file("bad.idx", "\x00\x00\x08\x03\x00\x00")                                   // IDX magic, truncated header
	otp := []string{"ot", "--preset", "paper-affine", "--steps", "5", "--chains", "2"}
	cases := []struct {
		name string
		args []string
		env  string // DFX_QUICK value, if not empty
		want string // a fragment of the message
	}{
		{"unknown command", []string{"nosuchcommand"}, "", "unknown command"},
		// dfx analytic
		{"analytic unknown flag", []string{"analytic", "--bogus"}, "", "not defined: -bogus"},
		{"analytic no schedule", cat(an, "--t", "0.5"), "", "--schedule is required"},
		{"analytic no t", cat(an, "--schedule", "ve"), "", "--t is required"},
		{"analytic sigma-max 0", cat(ve, "--sigma-max", "0"), "", "--sigma-max must be a finite number > 0"},
		{"analytic sigma-min -1", cat(ve, "--sigma-min", "-1"), "", "--sigma-min must be"},
		{"analytic beta-max NaN", cat(vp, "--beta-max", "NaN"), "", "--beta-max must be"},
		{"analytic beta-min Inf", cat(vp, "--beta-min", "Inf"), "", "--beta-min must be"},
		{"analytic t-min -1 t -0.5", cat(an, "--schedule", "ve", "--t-min", "-1", "--t", "-0.5"), "", "--t-min must be a finite number ≥ 0"},
		{"analytic t outside", cat(an, "--schedule", "ve", "--t", "2"), "", "outside the schedule's time domain"},
		{"analytic t NaN", cat(an, "--schedule", "ve", "--t", "NaN"), "", "--t must be a finite time"},
		{"analytic t Inf", cat(an, "--schedule", "ve", "--t", "Inf"), "", "--t must be a finite time"},
		{"analytic beta-min with ve", cat(ve, "--beta-min", "0.2"), "", "--beta-min applies to the vp/subvp schedule"},
		{"analytic sigma-min with vp", cat(vp, "--sigma-min", "0.1"), "", "--sigma-min applies to the ve schedule"},
		{"analytic sigma-max with edm", cat(an, "--schedule", "edm", "--t", "1", "--sigma-max", "3"), "", "--sigma-max applies to the ve"},
		{"analytic t-min ≥ t-max", cat(ve, "--t-min", "0.9", "--t-max", "0.5"), "", "invalid interval"},
		{"analytic unknown schedule", cat(an, "--schedule", "nope", "--t", "0.5"), "", "unknown --schedule"},
		{"analytic first row not a number", []string{"analytic", "--data", badFirst, "--points", x, "--schedule", "ve", "--t", "0.5"}, "", `badfirst.csv: line 1, column 2: "abc"`},
		{"analytic BOM header", []string{"analytic", "--data", bomHeader, "--points", x, "--schedule", "ve", "--t", "0.5"}, "", "bom.csv: line 1"},
		{"analytic empty field", []string{"analytic", "--data", emptyField, "--points", x, "--schedule", "ve", "--t", "0.5"}, "", "empty.csv: line 1, column 2: empty value"},
		{"analytic missing file", []string{"analytic", "--data", filepath.Join(dir, "no.csv"), "--points", x, "--schedule", "ve", "--t", "0.5"}, "", "no such file"},
		{"analytic two stdin", []string{"analytic", "--data", "-", "--points", "-", "--schedule", "ve", "--t", "0.5"}, "", "only one of"},
		{"analytic full d=100000", []string{"analytic", "--data", wide, "--points", wide, "--schedule", "ve", "--t", "0.5", "--full"}, "", "--vec"},
		{"analytic over --max-memory", cat(ve, "--max-memory", "100"), "", "more than the memory budget 100 B (--max-memory)"},
		{"analytic bad --max-memory", cat(ve, "--max-memory", "lots"), "", "--max-memory"},
		{"analytic extra argument", cat(ve, "extra"), "", "unexpected argument"},
		// dfx ot
		{"ot unknown flag", []string{"ot", "--bogus"}, "", "not defined: -bogus"},
		{"ot seed -1", cat(otp, "--seed", "-1"), "", "want an integer in [0, 2^64−1]"},
		{"ot chains 1e8", []string{"ot", "--preset", "paper-affine", "--chains", "100000000", "--max-memory", "8G"}, "", "fewer --chains"},
		{"ot chains 1e10 machine budget", []string{"ot", "--preset", "paper-affine", "--chains", "10000000000"}, "", "MemAvailable"},
		{"ot steps 2e9", []string{"ot", "--preset", "paper-affine", "--steps", "2000000000", "--max-memory", "8G"}, "", "fewer --steps"},
		{"ot s -1", cat(otp, "--s", "-1"), "", "--s must be a finite number ≥ 0"},
		{"ot s 0 below t_min", cat(otp, "--s", "0"), "", "outside [t_min, T)"},
		{"ot s ≥ T", cat(otp, "--s", "5"), "", "outside [t_min, T)"},
		{"ot grid under published", cat(otp, "--protocol", "published", "--grid", "karras"), "", "would ignore --grid"},
		{"ot prior-std Inf", cat(otp, "--prior-std", "Inf"), "", "--prior-std must be a finite number > 0"},
		{"ot prior-std 0", cat(otp, "--prior-std", "0"), "", "--prior-std must be"},
		{"ot prior-std NaN", cat(otp, "--prior-std", "NaN"), "", "--prior-std must be"},
		{"ot tol Inf", cat(otp, "--tol", "Inf"), "", "--tol must be"},
		{"ot tol 0", cat(otp, "--tol", "0"), "", "--tol must be"},
		{"ot chains 0", cat(otp, "--chains", "0"), "", "--chains must be at least 1"},
		{"ot steps 0", cat(otp, "--steps", "0"), "", "--steps must be at least 1"},
		{"ot published steps 1000", []string{"ot", "--preset", "paper-affine", "--protocol", "published", "--steps", "1000"}, "", "at most 999"},
		{"ot header without data", cat(otp, "--header"), "", "--header applies to --data"},
		{"ot two data sources", cat(otp, "--data", y), "", "exactly one of"},
		{"ot data first row not a number", []string{"ot", "--data", badFirst}, "", `badfirst.csv: line 1, column 2: "abc"`},
		{"ot unknown protocol", cat(otp, "--protocol", "other"), "", "unknown --protocol"},
		{"ot unknown matrix", cat(otp, "--matrix", "hessian"), "", "unknown --matrix"},
		// dfx nll
		{"nll no model", []string{"nll", "--points", x, "--schedule", "vp"}, "", "give a model"},
		{"nll exact without gmm", []string{"nll", "--checkpoint", score, "--points", x, "--exact"}, "", "--exact applies to --gmm"},
		{"nll exact with solver flags", cat(nl, "--exact", "--rtol", "1e-6"), "", "no effect with --exact"},
		{"nll gmm checkpoint missing", []string{"nll", "--gmm", filepath.Join(dir, "none.dfxckpt"), "--points", x, "--schedule", "vp"}, "", "no such file"},
		{"nll gmm checkpoint is a network", []string{"nll", "--gmm", score, "--points", x, "--schedule", "ve"}, "", "no mixture skip"},
		{"nll both models", cat(nl, "--checkpoint", score), "", "exclusive"},
		{"nll trace with gmm", cat(nl, "--trace", "vjp"), "", "--trace conflicts with --gmm"},
		{"nll no points", []string{"nll", "--gmm", gmm, "--schedule", "vp"}, "", "--points is required"},
		{"nll no schedule", []string{"nll", "--gmm", gmm, "--points", x}, "", "--schedule is required"},
		{"nll unknown solver", cat(nl, "--solver", "midpoint"), "", "unknown --solver"},
		{"nll steps with dopri5", cat(nl, "--steps", "10"), "", "would ignore --steps"},
		{"nll rtol with rk4", cat(nl, "--solver", "rk4", "--rtol", "1e-3", "--atol", "1e-3"), "", "would ignore --rtol and --atol"},
		{"nll steps 0", cat(nl, "--solver", "euler", "--steps", "0"), "", "--steps must be at least 1"},
		{"nll rtol 0", cat(nl, "--rtol", "0"), "", "--rtol must be a finite number > 0"},
		{"nll atol NaN", cat(nl, "--atol", "NaN"), "", "--atol must be"},
		{"nll s outside", cat(nl, "--s", "1"), "", "outside [t_min, T)"},
		{"nll s NaN", cat(nl, "--s", "NaN"), "", "--s must be"},
		{"nll batch 0", cat(nl, "--batch", "0"), "", "--batch must be at least 1"},
		{"nll seed unused", cat(nl, "--seed", "3"), "", "--seed applies to"},
		{"nll dequantize csv", cat(nl, "--dequantize"), "", "--dequantize applies to IDX"},
		{"nll gmm dim mismatch", []string{"nll", "--gmm", gmm, "--points", x5, "--schedule", "vp"}, "", "dimension 2, the --points are of dimension 5"},
		{"nll gmm not symmetric", []string{"nll", "--gmm", gmmAsym, "--points", x, "--schedule", "vp"}, "", "not symmetric"},
		{"nll gmm not PSD", []string{"nll", "--gmm", gmmNeg, "--points", x, "--schedule", "vp"}, "", "not positive semi-definite"},
		{"nll gmm negative weight", []string{"nll", "--gmm", gmmW, "--points", x, "--schedule", "vp"}, "", "weights must be finite and ≥ 0"},
		{"nll gmm ragged cov", []string{"nll", "--gmm", gmmRag, "--points", x, "--schedule", "vp"}, "", "covariance 0 row 1 has 1 values"},
		{"nll gmm unknown field", []string{"nll", "--gmm", gmmBad, "--points", x, "--schedule", "vp"}, "", "unknown field"},
		{"nll gmm overflow", []string{"nll", "--gmm", gmmHuge, "--points", x, "--schedule", "vp"}, "", "not a mixture JSON"},
		{"nll gmm missing", []string{"nll", "--gmm", filepath.Join(dir, "none.json"), "--points", x, "--schedule", "vp"}, "", "no such file"},
		{"nll unknown trace", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", "exact"}, "", "unknown --trace"},
		{"nll hutchinson 0", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", "hutchinson:0"}, "", "K must be an integer ≥ 1"},
		{"nll hutchinson no K", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", "hutchinson"}, "", "needs the number of probes"},
		{"nll hutchpp 2", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", "hutchpp:2"}, "", "K ≥ 3"},
		{"nll dftm without its network", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", "dftm"}, "", "needs the dftm network"},
		{"nll dftm-c without its network", []string{"nll", "--checkpoint", score, "--points", x, "--schedule", "ve", "--trace", "dftm-c"}, "", "needs the nu network"},
		{"nll no score network", []string{"nll", "--checkpoint", dftmCk, "--points", x, "--schedule", "ve"}, "", "no score network"},
		{"nll same network twice", []string{"nll", "--checkpoint", score, "--checkpoint", score, "--points", x, "--schedule", "ve"}, "", "both hold the score network"},
		{"nll checkpoint dim mismatch", []string{"nll", "--checkpoint", score, "--points", x5, "--schedule", "ve"}, "", "takes points of dimension 2"},
		{"nll not a checkpoint", []string{"nll", "--checkpoint", aFile, "--points", x, "--schedule", "ve"}, "", "--checkpoint"},
		{"nll over --max-memory", cat(nl, "--max-memory", "100"), "", "memory budget"},
		{"nll extra argument", cat(nl, "extra"), "", "unexpected argument"},
		// dfx ckpt
		{"ckpt unknown flag", []string{"ckpt", "--bogus"}, "", "not defined"},
		{"ckpt no file", []string{"ckpt"}, "", "want one checkpoint file"},
		{"ckpt missing file", []string{"ckpt", filepath.Join(dir, "none.ckpt")}, "", "no such file"},
		{"ckpt not a checkpoint", []string{"ckpt", aFile}, "", "ckpt"},
		{"reproduce candidates folder missing", []string{"reproduce", "mnist-candidates", "-out", filepath.Join(dir, "cand")}, "", "DFX_MNIST_CANDIDATES="},
		// dfx fit
		{"fit no out", []string{"fit"}, "", "-out must name"},
		{"fit zero components", []string{"fit", "-components", "0", "-out", filepath.Join(dir, "g.dfxckpt")}, "", "-components must be ≥ 1"},
		{"fit bad rank", []string{"fit", "-rank", "900", "-out", filepath.Join(dir, "g.dfxckpt")}, "", "-rank must be in"},
		{"fit bad shrink", []string{"fit", "-shrink", "1.5", "-out", filepath.Join(dir, "g.dfxckpt")}, "", "-shrink must be in"},
		{"fit idle with full rank", []string{"fit", "-rank", "0", "-idle", "1e-3", "-out", filepath.Join(dir, "g.dfxckpt")}, "", "-idle applies to a low rank"},
		{"fit out is a folder", []string{"fit", "-out", dir}, "", "is a folder"},
		{"fit out folder missing", []string{"fit", "-out", filepath.Join(dir, "nope", "g.dfxckpt")}, "", "folder does not exist"},
		{"fit out is not a checkpoint", []string{"fit", "-out", aFile}, "", "not a dfx checkpoint"},
		{"fit too many test images", []string{"fit", "-test", "20000", "-out", filepath.Join(dir, "g.dfxckpt")}, "", "-test must be in"},
		// dfx train
		{"train no network", []string{"train"}, "", "name the network"},
		{"train flag first", []string{"train", "--steps", "3"}, "", "name the network"},
		{"train unknown network", []string{"train", "unet"}, "", "no network"},
		{"train unknown flag", []string{"train", "eps", "--bogus"}, "", "not defined"},
		{"train zero steps", []string{"train", "eps", "--steps", "0", "-out", dir}, "", "--steps must be"},
		{"train zero save-every", []string{"train", "eps", "--save-every", "0", "-out", dir}, "", "--save-every must be"},
		{"train log-every above steps", []string{"train", "eps", "--steps", "10", "--log-every", "20", "-out", dir}, "", "--log-every must be"},
		{"train empty -out", []string{"train", "eps", "-out", ""}, "", "--out must name"},
		{"train -out under a file", []string{"train", "eps", "-out", filepath.Join(aFile, "sub")}, "", "-out"},
		{"train resume without state", []string{"train", "eps", "-resume", "-out", dir}, "", "no saved state"},
		{"train extra argument", []string{"train", "eps", "more"}, "", "unexpected argument"},
		// dfx sample
		{"sample unknown flag", []string{"sample", "--bogus"}, "", "not defined"},
		{"sample bad class", []string{"sample", "-class", "3,11", "-png", filepath.Join(dir, "s.png")}, "", "--class"},
		{"sample zero n", []string{"sample", "-n", "0", "-png", filepath.Join(dir, "s.png")}, "", "--n must be"},
		{"sample zero steps", []string{"sample", "-steps", "0", "-png", filepath.Join(dir, "s.png")}, "", "--steps must be"},
		{"sample negative scale", []string{"sample", "-scale", "-1", "-png", filepath.Join(dir, "s.png")}, "", "--scale must be"},
		{"sample NaN scale", []string{"sample", "-scale", "NaN", "-png", filepath.Join(dir, "s.png")}, "", "--scale must be"},
		{"sample no output", []string{"sample"}, "", "nothing to write"},
		{"sample output folder missing", []string{"sample", "-png", filepath.Join(dir, "none", "s.png")}, "", "folder does not exist"},
		{"sample bad seed", []string{"sample", "-seed", "-3", "-png", filepath.Join(dir, "s.png")}, "", "seed"},
		{"sample nets not a folder", []string{"sample", "-nets", aFile, "-png", filepath.Join(dir, "s.png")}, "", "not a folder"},
		{"sample operator without guide", cat(sp, "-operator", "vjp"), "", "--operator applies to adjoint guidance"},
		{"sample window without guide", cat(sp, "-window", "1:2"), "", "--window applies to adjoint guidance"},
		{"sample strength without guide", cat(sp, "-strength", "0.5"), "", "--strength applies to adjoint guidance"},
		{"sample inner without guide", cat(sp, "-inner", "5"), "", "--inner applies to adjoint guidance"},
		{"sample target without guide", cat(sp, "-target", "3"), "", "--target applies to adjoint guidance"},
		{"sample reference without guide", cat(sp, "-reference", ref), "", "--reference applies to adjoint guidance"},
		{"sample trace without density", cat(sp, "-trace", "df-tm"), "", "--trace applies to density guidance"},
		{"sample until without density", cat(sp, "-until", "0.1"), "", "--until applies to density guidance"},
		{"sample density bad target", []string{"sample", "-density", "level:3", "-png", filepath.Join(dir, "s.png")}, "", "--density"},
		{"sample density NaN", []string{"sample", "-density", "offset:NaN", "-png", filepath.Join(dir, "s.png")}, "", "--density"},
		{"sample density quantile 1", []string{"sample", "-density", "quantile:1", "-png", filepath.Join(dir, "s.png")}, "", "--density"},
		{"sample density with class", cat(sp, "-density", "offset:10"), "", "--class does not apply to density guidance"},
		{"sample density with guide", []string{"sample", "-density", "offset:10", "-guide", "class", "-png", filepath.Join(dir, "s.png")}, "", "two samplers"},
		{"sample density gain with offset", []string{"sample", "-density", "offset:10", "-gain", "3", "-png", filepath.Join(dir, "s.png")}, "", "--gain applies to a quantile target"},
		{"sample density bad trace", []string{"sample", "-density", "quantile:0.5", "-trace", "hutchinson:0", "-png", filepath.Join(dir, "s.png")}, "", "unknown --trace"},
		{"sample density bad until", []string{"sample", "-density", "quantile:0.5", "-until", "1", "-png", filepath.Join(dir, "s.png")}, "", "--until must be"},
		{"sample density bad ref", []string{"sample", "-density", "quantile:0.5", "-ref", "1", "-png", filepath.Join(dir, "s.png")}, "", "--ref must be"},
		{"sample unknown guide", cat(sp, "-guide", "aesthetic"), "", "unknown --guide"},
		{"sample unknown operator", cat(sp, "-guide", "class", "-operator", "exact"), "", "unknown --operator"},
		{"sample window not a range", cat(sp, "-guide", "class", "-window", "15"), "", "want FROM:TO"},
		{"sample window not integers", cat(sp, "-guide", "class", "-window", "a:b"), "", "want FROM:TO"},
		{"sample window reversed", cat(sp, "-guide", "class", "-window", "35:15"), "", "0 ≤ FROM ≤ TO ≤ --steps 50"},
		{"sample window past steps", cat(sp, "-guide", "class", "-steps", "20", "-window", "15:35"), "", "0 ≤ FROM ≤ TO ≤ --steps 20"},
		{"sample window negative", cat(sp, "-guide", "class", "-window", "-1:5"), "", "0 ≤ FROM"},
		{"sample strength negative", cat(sp, "-guide", "class", "-strength", "-0.1"), "", "--strength must be a finite number ≥ 0"},
		{"sample strength NaN", cat(sp, "-guide", "class", "-strength", "NaN"), "", "--strength must be"},
		{"sample strength Inf", cat(sp, "-guide", "class", "-strength", "Inf"), "", "--strength must be"},
		{"sample inner 0", cat(sp, "-guide", "class", "-inner", "0"), "", "--inner must be"},
		{"sample target 10", cat(sp, "-guide", "class", "-target", "10"), "", "--target must be a digit"},
		{"sample target with centring", cat(sp, "-guide", "centring", "-target", "3"), "", "--target applies to --guide class"},
		{"sample style without reference", cat(sp, "-guide", "style"), "", "--guide style needs --reference"},
		{"sample identity without reference", cat(sp, "-guide", "identity"), "", "--guide identity needs --reference"},
		{"sample reference with class", cat(sp, "-guide", "class", "-reference", ref), "", "--reference applies to --guide style or identity"},
		{"sample reference with centring", cat(sp, "-guide", "centring", "-reference", ref), "", "--reference applies to --guide style or identity"},
		{"sample reference-row without reference", cat(sp, "-guide", "centring", "-reference-row", "1"), "", "--reference-row applies to --reference"},
		{"sample reference missing", cat(sp, "-guide", "style", "-reference", filepath.Join(dir, "none.csv")), "", "no such file"},
		{"sample reference wrong size", cat(sp, "-guide", "style", "-reference", x), "", "rows of 2 values, want 784"},
		{"sample reference out of range", cat(sp, "-guide", "identity", "-reference", bright), "", "want values in [−1, 1]"},
		{"sample reference-row past the end", cat(sp, "-guide", "identity", "-reference", ref, "-reference-row", "1"), "", "holds 1 rows"},
		{"sample reference-row negative", cat(sp, "-guide", "style", "-reference", ref, "-reference-row", "-1"), "", "--reference-row must be ≥ 0"},
		{"sample reference not IDX", cat(sp, "-guide", "style", "-reference", badIDX), "", "--reference"},
		// dfx reproduce
		{"reproduce unknown flag", []string{"reproduce", "--bogus", "ot"}, "", "not defined"},
		{"reproduce no experiment", []string{"reproduce"}, "", "name an experiment"},
		{"reproduce unknown experiment", []string{"reproduce", "nope"}, "", "unknown experiment"},
		{"reproduce empty -out", []string{"reproduce", "-out", "", "ot"}, "", "-out is empty"},
		{"reproduce -out under a file", []string{"reproduce", "-out", filepath.Join(aFile, "sub"), "ot"}, "", "not an existing folder"},
		{"reproduce bad DFX_QUICK", []string{"reproduce", "ot"}, "yes", "DFX_QUICK"},
		// an imported network in the MNIST studies
		{"reproduce mnist unknown part", cat(rq, "mnist", "-parts", "timing,bogus"), "", `part "bogus"`},
		{"reproduce mnist -truth-queries 0", cat(rq, "mnist", "-truth-queries", "0"), "", "-truth-queries must be in"},
		{"reproduce mnist missing checkpoint", cat(rq, "mnist", "-checkpoint", aFile+".none"), "", "no such file"},
		{"reproduce mnist not imported", cat(rq, "mnist", "-checkpoint", committedEps, "-parts", "timing"), "", "not written by dfx import"},
		{"reproduce mnist imported with guidance", cat(rq, "mnist", "-checkpoint", exampleUNet), "", "-parts"},
		{"reproduce mnist imported without t_θ", cat(rq, "mnist", "-checkpoint", exampleUNet, "-parts", "truth", "-nets", dir), "",
			"holds no dftm.dfxckpt"},
		{"reproduce mnist-model unconditional samples", cat(rq, "mnist-model", "-checkpoint", exampleUNet), "", "unconditional"},
		{"reproduce mnist-model not MNIST's", cat(rq, "mnist-model", "-checkpoint", toyScore, "-parts", "likelihood"), "",
			"dimension"},
		{"reproduce mnist-model -images 0", cat(rq, "mnist-model", "-images", "0", "-parts", "likelihood"), "", "-images"},
		{"reproduce mnist-model -images past the test set", cat(rq, "mnist-model", "-images", "20000", "-parts", "likelihood"), "", "the test set holds"},
		{"reproduce mnist -truth-queries past the test set", cat(rq, "mnist", "-truth-queries", "20000"), "", "-truth-queries must be in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("DFX_QUICK", c.env)
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
}

// A density work folder that is a file, cannot be made, or holds a corrupt
// density-quick.json or shard file, and a bad DFX_MNIST_DENSITY_SHARD are
// refused before any work: exit 2, one line, nothing on stdout.
func TestDensityWorkBadInput(t *testing.T) {
	dir := t.TempDir()
	aFile := filepath.Join(dir, "plain")
	work := filepath.Join(dir, "work")
	if err := os.WriteFile(aFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "density-quick.json"), []byte(`{"settings":"x","rows":[`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{{aFile, "not a folder"}, {filepath.Join(aFile, "sub"), "work folder"}, {work, "density-quick.json"}} {
		t.Setenv("DFX_MNIST_DENSITY_WORK", c.dir)
		code, out, errOut := runCLI("reproduce", "mnist-density", "-quick", "-out", filepath.Join(dir, "out"))
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("DFX_MNIST_DENSITY_WORK=%s: exit %d, stdout %q, stderr %q; want 2, nothing, one line saying %q", c.dir, code, out, errOut, c.want)
		}
	}
	// A malformed shard, a shard without a work folder, and a corrupt
	// shard file.
	good := filepath.Join(dir, "good")
	if err := os.MkdirAll(good, 0o755); err != nil {
		t.Fatal(err)
	}
	shardFile := filepath.Join(dir, "shardwork")
	if err := os.MkdirAll(shardFile, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shardFile, "density-quick.shard-2-of-2.json"), []byte(`{"settings":`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A shard writes no report: -out and other experiments are refused.
	for _, c := range []struct {
		work, shard, want string
		args              []string
	}{
		{good, "3/2", "shard", nil}, {good, "x", "shard", nil}, {"", "1/2", "work folder", nil}, {shardFile, "1/2", "shard-2-of-2", nil},
		{good, "1/2", "drop -out", []string{"-out", filepath.Join(dir, "out")}}, {good, "1/2", "alone", []string{"mnist"}},
	} {
		t.Setenv("DFX_MNIST_DENSITY_WORK", c.work)
		t.Setenv("DFX_MNIST_DENSITY_SHARD", c.shard)
		code, out, errOut := runCLI(append([]string{"reproduce", "mnist-density", "-quick"}, c.args...)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("DFX_MNIST_DENSITY_WORK=%s DFX_MNIST_DENSITY_SHARD=%s %v: exit %d, stdout %q, stderr %q; want 2, nothing, one line saying %q", c.work, c.shard, c.args, code, out, errOut, c.want)
		}
	}
}

// A mnist-model work folder holding a malformed store file or legacy
// likelihood.json, one made for another network or other settings, and a
// bad DFX_MNIST_MODEL_SHARD are refused: exit 2, one line of error, nothing
// on stdout (the malformed ones before any work; the others once the run
// knows its network, after the line that starts it).
func TestModelWorkBadInput(t *testing.T) {
	dir := t.TempDir()
	folder := func(name, file, text string) string {
		work := filepath.Join(dir, name)
		if err := os.MkdirAll(work, 0o755); err != nil {
			t.Fatal(err)
		}
		if file != "" {
			if err := os.WriteFile(filepath.Join(work, file), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return work
	}
	good := folder("good", "", "")
	otherNet := `{"digest":"x","settings":{},"networks":"other","values":{},"rows":[],"machine":"","backend":"","seconds":0}`
	legacy := `{"network":"eps","digest":"other","images":4,"batch":50,"rtol":0.01,"probes":1,"seed":1,"trace":"t",` +
		`"bpd":[],"coarse":[],"nfe":[],"machine":"m","backend":"b","seconds":0}`
	for i, c := range []struct {
		work, shard, want string
		args              []string
		midRun            bool // found once the run knows its network, after -out is claimed
	}{
		{folder("store", "mnist-model-likelihood.json", `{"rows":[`), "", "mnist-model-likelihood.json", nil, false},
		{folder("legacy", "likelihood.json", `{"bpd":`), "", "likelihood.json", nil, false},
		{folder("othernet", "mnist-model-likelihood.json", otherNet), "", "other networks", nil, true},
		{folder("otherlegacy", "likelihood.json", legacy), "", "likelihood.json", nil, true},
		{good, "3/2", "shard", nil, false}, {"", "1/2", "work folder", nil, false},
		{good, "1/2", "drop -out", []string{"-out", filepath.Join(dir, "out")}, false},
	} {
		t.Setenv("DFX_MNIST_MODEL_WORK", c.work)
		t.Setenv("DFX_MNIST_MODEL_SHARD", c.shard)
		args := append([]string{"reproduce", "mnist-model", "-quick", "-parts", "likelihood"}, c.args...)
		out := filepath.Join(dir, fmt.Sprint("out", i))
		if c.shard == "" {
			args = append(args, "-out", out)
		}
		code, stdout, errOut := runCLI(args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if c.midRun && len(lines) == 2 && strings.HasPrefix(lines[0], "reproduce mnist-model (quick) → ") { // the run's first line, then its error
			lines = lines[1:]
		}
		if code != 2 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("DFX_MNIST_MODEL_WORK=%s DFX_MNIST_MODEL_SHARD=%s %v: exit %d, stdout %q, stderr %q; want 2, nothing, one line saying %q",
				c.work, c.shard, c.args, code, stdout, errOut, c.want)
		}
		if _, err := os.Stat(out); !c.midRun && err == nil {
			t.Errorf("DFX_MNIST_MODEL_WORK=%s: refused after -out was claimed (%s), not before any work", c.work, errOut)
		}
	}
}

// A work file made for other settings is found only once the run knows its
// networks, after the checks: its error (mnist.ErrWork) is bad input too.
func TestWorkErrorsAreBadInput(t *testing.T) {
	if !isBadInput(fmt.Errorf("mnist-density: density-full.json was made with other networks: %w", mnist.ErrWork)) {
		t.Error("mnist.ErrWork is not bad input")
	}
}
