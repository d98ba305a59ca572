package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"gonum.org/v1/gonum/mat"
)

type nllOut struct {
	Points []struct {
		NLL, BPD float64
		NFE      int
	} `json:"points"`
	Summary map[string]any `json:"summary"`
}

func runNLLJSON(t *testing.T, args ...string) nllOut {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"nll", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("dfx nll %v: exit %d: %s", args, code, errOut)
	}
	var r nllOut
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("bad JSON %q: %v", out, err)
	}
	return r
}

// gmmCase is a Gaussian mixture in d dimensions with its JSON and points.
type gmmCase struct {
	w      []float64
	mu     [][]float64
	cov    [][][]float64
	points [][]float64
}

func (g gmmCase) files(t *testing.T) (gmmPath, csvPath string) {
	raw, _ := json.Marshal(map[string]any{"weights": g.w, "means": g.mu, "covs": g.cov})
	var b strings.Builder
	for _, p := range g.points {
		b.WriteString(strings.Trim(strings.Join(strings.Fields(fmt.Sprint(p)), ","), "[]") + "\n")
	}
	return writeTemp(t, "g.json", string(raw)), writeTemp(t, "x.csv", b.String())
}

// checkpoint writes the mixture as a float64 mixture checkpoint (as dfx
// fit writes them) and returns its path.
func (g gmmCase) checkpoint(t *testing.T) string {
	t.Helper()
	d := len(g.mu[0])
	means := mat.NewDense(len(g.mu), d, nil)
	var covs []*mat.SymDense
	for k := range g.mu {
		means.SetRow(k, g.mu[k])
		c := mat.NewSymDense(d, nil)
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				c.SetSym(i, j, g.cov[k][i][j])
			}
		}
		covs = append(covs, c)
	}
	m, err := mixture.NewGaussian(means, covs, g.w)
	if err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.Mixture(m, 0, "float64", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Stamp(c, nil, checkpoint.Provenance{Data: "test mixture", Scaling: "none", Dequantize: "none"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "g.dfxckpt")
	if err := c.Write(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// exactNLL is −log q_s(x), q_s = Σ_k w_k N(α_s μ_k, α_s² Σ_k + σ_s² I), by
// Cholesky factors (independent of dfx/mixture).
func (g gmmCase) exactNLL(t *testing.T, s schedule.Schedule, at float64, x []float64) float64 {
	c, err := schedule.At(s, at)
	if err != nil {
		t.Fatal(err)
	}
	d := len(x)
	wsum := 0.0
	for _, w := range g.w {
		wsum += w
	}
	logs := make([]float64, len(g.w))
	for k := range g.w {
		cov := mat.NewSymDense(d, nil)
		for i := range d {
			for j := i; j < d; j++ {
				v := c.Alpha * c.Alpha * g.cov[k][i][j]
				if i == j {
					v += c.Sigma * c.Sigma
				}
				cov.SetSym(i, j, v)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(cov) {
			t.Fatal("covariance not PD")
		}
		r := mat.NewVecDense(d, nil)
		for i := range d {
			r.SetVec(i, x[i]-c.Alpha*g.mu[k][i])
		}
		var sol mat.VecDense
		if err := ch.SolveVecTo(&sol, r); err != nil {
			t.Fatal(err)
		}
		logs[k] = math.Log(g.w[k]/wsum) - 0.5*mat.Dot(r, &sol) - 0.5*ch.LogDet() - 0.5*float64(d)*math.Log(2*math.Pi)
	}
	mx := math.Inf(-1)
	for _, l := range logs {
		mx = math.Max(mx, l)
	}
	sum := 0.0
	for _, l := range logs {
		sum += math.Exp(l - mx)
	}
	return -(mx + math.Log(sum))
}

var gmm2 = gmmCase{
	w:      []float64{0.3, 0.7},
	mu:     [][]float64{{0.5, -0.2}, {-0.4, 0.3}},
	cov:    [][][]float64{{{0.2, 0.05}, {0.05, 0.1}}, {{0.1, -0.02}, {-0.02, 0.3}}},
	points: [][]float64{{0.1, 0.2}, {-0.5, 0.4}, {1, 1}},
}

var gmm5 = gmmCase{
	w:  []float64{2, 1},
	mu: [][]float64{{0.3, -0.2, 0.1, 0, 0.4}, {-0.3, 0.2, 0, -0.1, -0.2}},
	cov: [][][]float64{
		{{0.3, 0.1, 0, 0, 0}, {0.1, 0.2, 0.05, 0, 0}, {0, 0.05, 0.25, 0, 0}, {0, 0, 0, 0.1, 0.02}, {0, 0, 0, 0.02, 0.15}},
		{{0.2, 0, 0, 0, -0.05}, {0, 0.3, 0, 0, 0}, {0, 0, 0.1, 0.03, 0}, {0, 0, 0.03, 0.2, 0}, {-0.05, 0, 0, 0, 0.25}},
	},
	points: [][]float64{{0.1, 0.2, -0.3, 0.1, 0}, {-0.6, 0.4, 0.2, -0.2, -0.5}},
}

// TestNLLOfAGaussianMixtureIsTheExactDiffusedDensity: with the exact score
// and trace, the command's NLL equals −log q_s(x) in closed form, up to the
// solver's error and the prior's mismatch at T (VP with β_max = 40: α_T ≈
// 4·10⁻⁵, so log q_T and log N(0, σ_T² I) differ by ≈ 10⁻⁵). A flipped
// trace sign moves the NLL by Δ = ∫ g² tr F, orders above the tolerance.
func TestNLLOfAGaussianMixtureIsTheExactDiffusedDensity(t *testing.T) {
	s, err := schedule.New("vp", map[string]float64{schedule.ParamBetaMax: 40})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		name string
		c    gmmCase
	}{{"d=2", gmm2}, {"d=5", gmm5}} {
		gp, xp := g.c.files(t)
		common := []string{"--gmm", gp, "--points", xp, "--schedule", "vp", "--beta-max", "40"}
		for _, sv := range []struct {
			name string
			args []string
			at   float64
			tol  float64
		}{
			{"dopri5 1e-8", []string{"--rtol", "1e-8", "--atol", "1e-8"}, 0, 1e-4},
			{"rk4 400 steps", []string{"--solver", "rk4", "--steps", "400"}, 0, 1e-4},
			{"dopri5 from s=0.3", []string{"--rtol", "1e-8", "--atol", "1e-8", "--s", "0.3"}, 0.3, 1e-4},
			{"exact", []string{"--exact"}, 0, 1e-10},
			{"exact from s=0.3", []string{"--exact", "--s", "0.3"}, 0.3, 1e-10},
			{"checkpoint, exact", []string{"--exact", "--gmm", g.c.checkpoint(t)}, 0, 1e-10},
			{"checkpoint, dopri5 1e-8", []string{"--rtol", "1e-8", "--atol", "1e-8", "--gmm", g.c.checkpoint(t)}, 0, 1e-4},
		} {
			t.Run(g.name+" "+sv.name, func(t *testing.T) {
				r := runNLLJSON(t, append(append([]string{}, common...), sv.args...)...) // a repeated --gmm: the last wins
				at := sv.at
				if at == 0 {
					at, _ = s.Interval()
				}
				for i, p := range r.Points {
					want := g.c.exactNLL(t, s, at, g.c.points[i])
					if rel := math.Abs(p.NLL-want) / math.Max(math.Abs(want), 1); rel > sv.tol {
						t.Errorf("point %d: nll %.10g, exact %.10g (relative error %.2g > %g)", i, p.NLL, want, rel, sv.tol)
					}
					if d := float64(len(g.c.points[i])); math.Abs(p.BPD-p.NLL/(d*math.Ln2)) > 1e-12 {
						t.Errorf("point %d: bpd %g ≠ nll/(d ln 2) = %g for CSV points", i, p.BPD, p.NLL/(d*math.Ln2))
					}
				}
			})
		}
	}
}

// toyNet is a committed toy network (checkerboard, VE, seed 1).
func toyNet(t *testing.T, net string) string {
	p := filepath.Join("..", "..", "toys", "checkpoints", "checkerboard-n5000-d1-ve-"+net+"-w64x3-s8000-seed1.dfxckpt")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no committed checkpoint: %v", err)
	}
	return p
}

// TestNLLOfAToyNetworkIsFiniteForEveryTraceAndVJPAgreesWithDFTM: the
// committed checkerboard networks (score, DF-TM, centred DF-TM in separate
// files, combined by repeating --checkpoint as a trace needs them) give finite NLLs with every
// trace estimator; at a large s, where the Fisher is nearly d/σ² and the
// networks are accurate, VJP and DF-TM agree.
func TestNLLOfAToyNetworkIsFiniteForEveryTraceAndVJPAgreesWithDFTM(t *testing.T) {
	score, dftm, dftmc := toyNet(t, "score"), toyNet(t, "df-tm"), toyNet(t, "df-tm-c")
	x := writeTemp(t, "x.csv", "0.5,0.5\n-0.5,0.5\n1.5,-1.2\n")
	nll := map[string][]float64{}
	for _, tr := range []string{"vjp", "hutchinson:4", "hutchpp:6", "dftm", "dftm-c"} {
		base := []string{"--checkpoint", score, "--points", x, "--schedule", "ve", "--solver", "euler", "--steps", "20"}
		switch tr { // each trace is given the files it uses, no more (an unused one is an error)
		case "dftm":
			base = append(base, "--checkpoint", dftm)
		case "dftm-c":
			base = append(base, "--checkpoint", dftmc)
		}
		for _, s := range []string{"0.05", "0.5"} {
			r := runNLLJSON(t, append(append([]string{}, base...), "--trace", tr, "--s", s)...)
			for i, p := range r.Points {
				if math.IsNaN(p.NLL) || math.IsInf(p.NLL, 0) || p.NFE != 30 {
					t.Errorf("--trace %s --s %s point %d: nll %g, nfe %d (want finite, 20+10 evaluations)", tr, s, i, p.NLL, p.NFE)
				}
				nll[tr+"@"+s] = append(nll[tr+"@"+s], p.NLL)
			}
		}
	}
	for i := range 3 {
		v, d := nll["vjp@0.5"][i], nll["dftm@0.5"][i]
		if math.Abs(v-d) > 0.05*math.Max(1, math.Abs(v)) {
			t.Errorf("point %d at s = 0.5: VJP nll %g and DF-TM nll %g differ by more than 5%%", i, v, d)
		}
	}
	t.Logf("nll by trace@s: %v", nll)
}

// TestNLLTakesTheScheduleFromTheCheckpoint: a network's checkpoint records
// its schedule, so --schedule may be left out, and gives the same NLL.
func TestNLLTakesTheScheduleFromTheCheckpoint(t *testing.T) {
	score := toyNet(t, "score")
	pts := filepath.Join("..", "..", "examples", "checkerboard.csv")
	common := []string{"--checkpoint", score, "--points", pts, "--solver", "heun", "--steps", "8"}
	a := runNLLJSON(t, common...)
	b := runNLLJSON(t, append(common, "--schedule", "ve")...)
	if len(a.Points) == 0 || len(a.Points) != len(b.Points) {
		t.Fatalf("%d and %d points", len(a.Points), len(b.Points))
	}
	for i := range a.Points {
		if a.Points[i].NLL != b.Points[i].NLL {
			t.Errorf("point %d: nll %g without --schedule, %g with --schedule ve", i, a.Points[i].NLL, b.Points[i].NLL)
		}
	}
}

// TestNLLCombinesTheCommittedTraceNetworks: the committed ε-network and
// its ν_θ (whose checkpoint borrows the ε-network's mixture) combine in
// dfx nll, the ν_θ file alone is refused with one line, and the trace it
// gives is near the skip control variate's (the same images, same solve).
func TestNLLCombinesTheCommittedTraceNetworks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the committed MNIST networks")
	}
	dir := t.TempDir()
	idx := filepath.Join(dir, "two.idx")
	var b bytes.Buffer
	for _, v := range []uint32{0x803, 2, 28, 28} {
		_ = binary.Write(&b, binary.BigEndian, v)
	}
	for i := range 2 * 784 { // two blobs of ink on black
		p := byte(0)
		if r, c := i%784/28, i%28; (r-14)*(r-14)+(c-14-3*(i/784))*(c-14-3*(i/784)) < 30 {
			p = 200
		}
		b.WriteByte(p)
	}
	if err := os.WriteFile(idx, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join("..", "..", "mnist", "checkpoints")
	common := []string{"--points", idx, "--dequantize", "--rtol", "1e-2"}
	nu := runNLLJSON(t, append([]string{"--checkpoint", filepath.Join(ck, "eps.dfxckpt"), "--checkpoint", filepath.Join(ck, "dftm-c.dfxckpt"), "--trace", "dftm-c"}, common...)...)
	cv := runNLLJSON(t, append([]string{"--checkpoint", filepath.Join(ck, "eps.dfxckpt"), "--trace", "skip-hutchinson:4"}, common...)...)
	for i := range nu.Points {
		if d := math.Abs(nu.Points[i].BPD - cv.Points[i].BPD); !(d < 0.5) {
			t.Errorf("image %d: %g bpd with ν_θ, %g with the skip control variate", i, nu.Points[i].BPD, cv.Points[i].BPD)
		}
	}
	code, out, errOut := runCLI(append([]string{"nll", "--checkpoint", filepath.Join(ck, "dftm-c.dfxckpt"), "--trace", "dftm-c"}, common...)...)
	if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 {
		t.Errorf("ν_θ alone: exit %d, stdout %q, stderr %q; want 2, nothing, one line", code, out, errOut)
	}
}

// TestNLLHutchinsonProbesDoNotRepeatAcrossPoints: the probes of one batch
// are one stream, so identical points get different Hutchinson estimates
// (a trace evaluated in calls too short for the batch reseeded the stream
// at every call, and point PerCall repeated point 0).
func TestNLLHutchinsonProbesDoNotRepeatAcrossPoints(t *testing.T) {
	var rows []string
	for range 16 {
		rows = append(rows, strings.TrimSuffix(strings.Repeat("0.25,", 784), ","))
	}
	pts := writeTemp(t, "same.csv", strings.Join(rows, "\n")+"\n")
	code, out, errOut := runCLI("nll", "--checkpoint", "../../mnist/checkpoints/eps.dfxckpt", "--trace", "hutchinson:2",
		"--points", pts, "--solver", "euler", "--steps", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct{ Points []struct{ NLL float64 } }
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Points) != 16 {
		t.Fatalf("%v: %q", err, out)
	}
	seen := map[float64]int{}
	for _, p := range res.Points {
		seen[p.NLL]++
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("%d identical points share the estimate %.17g: their probes repeat", n, v)
		}
	}
}
