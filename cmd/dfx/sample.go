package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot/vg"

	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/internal/progress"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

const sampleUsage = `usage: dfx sample [-class 0,1,…|all] [-n 8] [-scale 3] [-steps 25] [-seed 1] [-png samples.png] [-npy samples.npy]
                  [-nets DIR] [-model eps | -checkpoint NET.dfxckpt [-checkpoint TNET.dfxckpt]]
                  [-guide class|style|identity|centring [-operator dfea|vjp] [-window FROM:TO] [-strength 0.2] [-inner 10]
                   [-target K] [-reference FILE [-reference-row I]]]
                  [-density offset:P|quantile:p [-trace df-tm-c|df-tm|hutchinson:K|skip-hutchinson:K|vjp] [-until T] [-gain 10] [-ref 64]]
Draws class-conditional MNIST samples with DDIM (η = 0) and classifier-free guidance ε̃ = ε_∅ + s (ε_c − ε_∅) (-scale 0:
unconditional, 1: conditional) from the committed networks (or -nets DIR, as written by dfx train; DFX_MNIST_NETS=DIR is
-nets' default, and -nets wins). Writes a PNG grid (rows: classes, columns: seeds) and/or the samples as an .npy array
[rows, 784] in [−1, 1] (clipped), each atomically. Sample i uses its own noise stream (seed, i); the network runs in
float32 on 32 samples a graph call, so a sample can differ in its last digits (≈ 1e-5) with how many samples are drawn.
Plain sampling loads the ε-network alone: -model picks another one (e.g. a candidate trained by dfx train NAME -out DIR,
with -nets DIR). -checkpoint takes the ε-network of a file instead, for plain, adjoint- and density-guided sampling (e.g.
an imported network, dfx import: 784 values a point, the VP schedule, classes 0…9 with the null class 10); repeat it to
add the t_θ or ν_θ that dfx train dftm|dftm-c -eps trained for it (-trace df-tm, df-tm-c). The rewards' classifier is
the committed one (or -nets DIR's). Plain and adjoint-guided sampling are class-conditional (-class-input, -classes 10 at
import); density guidance also takes an unconditional network.
With -guide, adjoint guidance (paper sec. "Adjoint optimization sampling", SAG) steers each sample towards a reward of
its predicted clean image x̂₀ (a 10-step inner DDIM solve, -inner) on the outer steps [FROM, TO) of -window (default:
30%–70% of the steps, 15:35 with -steps 50, the paper's protocol; -steps defaults to 50 with -guide): x ← x − S σ(t)
λ/‖λ‖·√784 with λ = ∂L(x̂₀)/∂x_t by the discrete adjoint, S = -strength (a fraction of the noise's norm). -operator
picks the Fisher product of the adjoint pass: dfea (DF-EA, eq. EA_approx, no network pass) or vjp (the unconditional
network's vector-Jacobian product). Rewards (losses to minimise): class, −log p(K | x̂₀) of the classifier (the
aesthetic/PickScore role; K = -target, default each row's class); style, a Gram-matrix loss on the classifier's hidden
layers against -reference (the CLIP style role); identity, the relative distance of the classifier's penultimate
features to -reference's (the ArcFace role); centring, the squared distance of the ink centroid from the image centre in
pixels. -reference is one image of 784 pixels: an IDX image file (gzipped or not; pixels 0…255) or a CSV/.npy row in
[−1, 1]; -reference-row picks the image (default 0).
With -density, density guidance (dfx/pfode DensityGuide) draws -n unconditional samples along the PF-ODE (RK4, -steps
default 100, uniform in log-SNR) moved by u = v + λ s/‖s‖², which changes d/dt log q_t(x_t) by λ: offset:P adds P nats
of log-density per unit time (P > 0: smoother, more typical images; P < 0: more detail), quantile:p holds each sample's
log q_t at the p-quantile of log q_t under q_t, the level read from -ref unguided samples carried along the PF-ODE with
their log-density (gain -gain). -trace is the Fisher trace that tracks log q and steers a quantile target: df-tm-c
(centred DF-TM, one network pass), df-tm (the paper's DF-TM, whose α²/σ⁴ factor amplifies its error at small t),
hutchinson:K, skip-hutchinson:K (a network with a mixture skip, as the committed one: the skip's exact trace plus
Hutchinson-K on the residual), or vjp (784 VJPs a point). -until T stops guiding below t = T. The tracked bpd of each
sample goes to stderr.`

func runSample(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	classes := fs.String("class", "all", "comma-separated classes in 0…9, or all")
	n := fs.Int("n", 8, "samples per class")
	scale := fs.Float64("scale", 3, "guidance scale s ≥ 0 (0: unconditional, 1: conditional, > 1: guided)")
	steps := fs.Int("steps", 25, "DDIM steps")
	var seed seedFlag = 1
	fs.Var(&seed, "seed", "seed of the initial noise, an integer in [0, 2^64−1]")
	pngOut := fs.String("png", "", "write the grid of samples to this PNG file")
	npyOut := fs.String("npy", "", "write the samples [rows, 784] to this .npy file")
	nets := fs.String("nets", "", "folder of networks written by dfx train (default: DFX_MNIST_NETS, else the committed ones)")
	epsName := fs.String("model", "eps", "plain sampling: the ε-network to sample (a name of dfx train's list, from -nets DIR or committed)")
	var ckpts listFlag
	fs.Var(&ckpts, "checkpoint", "the ε-network of this checkpoint (e.g. written by dfx import) instead of the committed one; "+
		"repeat it to add the t_θ or ν_θ trained for it")
	gf := guideFlags(fs)
	df := densityFlags(fs)
	if code, ok := parseFlags(fs, args, stderr, "sample", sampleUsage); !ok {
		return code
	}
	netsFrom := "--nets " + *nets
	if !isSet(fs, "nets") { // DFX_MNIST_NETS is -nets' default, as for dfx reproduce
		*nets = os.Getenv("DFX_MNIST_NETS")
		netsFrom = "DFX_MNIST_NETS=" + *nets
	}
	if gf.guide != "" && !isSet(fs, "steps") {
		*steps = 50 // the paper's protocol
	}
	if df.target != "" && !isSet(fs, "steps") {
		*steps = 100 // RK4 on the log-SNR grid (4 evaluations a step)
	}
	cls, err := parseClasses(*classes)
	if err != nil {
		return fail(stderr, "sample", err)
	}
	if err := checkSampleFlags(*n, *steps, *scale, *pngOut, *npyOut, *nets, netsFrom); err != nil {
		return fail(stderr, "sample", err)
	}
	if isSet(fs, "model") && (gf.guide != "" || df.target != "") { // before their own checks: the conflict is the first thing to fix
		return fail(stderr, "sample", errors.New("-model applies to plain sampling: -guide and -density use the "+
			"committed set's eps (or -nets DIR's) with its DF-TM networks, or -checkpoint files"))
	}
	if isSet(fs, "model") && isSet(fs, "checkpoint") {
		return fail(stderr, "sample", errors.New("-model and -checkpoint both name the ε-network: give one"))
	}
	guide, err := gf.check(fs, *steps)
	if err != nil {
		return fail(stderr, "sample", err)
	}
	dens, err := df.check(fs, gf.guide)
	if err != nil {
		return fail(stderr, "sample", err)
	}
	net, err := openSampleNets(fs, *nets, netsFrom, *epsName, ckpts, sampleUse{guide: gf.guide != "", density: dens})
	if err != nil {
		return failErr(stderr, "sample", err)
	}
	var x *mat.Dense
	grid := classGrid(cls, *n, *steps, *scale, uint64(seed), guide)
	if dens != nil {
		x, err = dens.sample(ctx, net, *n, *steps, uint64(seed), stderr)
		grid = sampleGrid{title: fmt.Sprintf("unconditional, RK4 %d steps, seed %d, %s", *steps, seed, dens), ylabel: "", rows: []string{"guided"}, n: *n}
	} else {
		x, err = sampleClasses(ctx, net, guide, cls, *n, *steps, *scale, uint64(seed), stderr)
	}
	if err != nil {
		return failRun(stderr, "sample", err)
	}
	x = mnist.Clip(x)
	if err := writeSamples(x, grid, *pngOut, *npyOut); err != nil {
		return failRun(stderr, "sample", err)
	}
	for _, p := range []string{*npyOut, *pngOut} {
		if p != "" {
			fmt.Fprintln(stdout, p)
		}
	}
	return 0
}

// parseClasses parses --class: comma-separated digits, or all.
func parseClasses(v string) ([]int, error) {
	if v == "all" {
		return []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, nil
	}
	var cls []int
	for _, f := range strings.Split(v, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 0 || k > 9 {
			return nil, fmt.Errorf("--class %q: want comma-separated integers in 0…9, or all", v)
		}
		cls = append(cls, k)
	}
	return cls, nil
}

// checkSampleFlags checks dfx sample's flags before any network loads.
// netsFrom names where nets came from (-nets or DFX_MNIST_NETS) in errors.
func checkSampleFlags(n, steps int, scale float64, pngOut, npyOut, nets, netsFrom string) error {
	switch {
	case n < 1 || n > 1000:
		return fmt.Errorf("--n must be an integer in [1, 1000], got %d", n)
	case steps < 1 || steps > 10000:
		return fmt.Errorf("--steps must be an integer in [1, 10000], got %d", steps)
	case pngOut == "" && npyOut == "":
		return errors.New("nothing to write: give -png FILE and/or -npy FILE")
	}
	if err := finite("scale", scale, 0, true); err != nil {
		return err
	}
	if pngOut != "" && npyOut != "" && sameFile(pngOut, npyOut) {
		return fmt.Errorf("-png and -npy name the same file %s: one would overwrite the other", pngOut)
	}
	if err := checkOutFile("png", pngOut, outfile.PNGOwned); err != nil {
		return err
	}
	if err := checkOutFile("npy", npyOut, outfile.NPYOwned); err != nil {
		return err
	}
	if nets != "" {
		if st, err := os.Stat(nets); err != nil || !st.IsDir() {
			return fmt.Errorf("%s is not a folder", netsFrom)
		}
	}
	return nil
}

// sampleClasses draws n samples of each class (rows in class order, not
// clipped), one class per call so that the progress display on stderr
// moves, with adjoint guidance when guide is not nil.
func sampleClasses(ctx context.Context, net *mnist.Networks, guide *sampleGuide, cls []int, n, steps int, scale float64, seed uint64,
	stderr io.Writer) (*mat.Dense, error) {
	var class []int
	var sc []float64
	for _, k := range cls {
		for range n {
			class, sc = append(class, k), append(sc, scale)
		}
	}
	meter := progress.New(stderr, "sample", "class", len(cls))
	x := mat.NewDense(len(class), mnist.Dim, nil)
	for i := range cls {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var rows *mat.Dense
		var err error
		msg := fmt.Sprintf("class %d", cls[i])
		if guide == nil {
			rows, err = sampleRows(ctx, net, mnist.SampleConfig{Steps: steps, Seed: seed}, class, sc, i*n, (i+1)*n)
		} else {
			var res *adjoint.Result
			res, err = guide.sample(ctx, net, class, scale, seed, i*n, (i+1)*n)
			if err == nil {
				rows = res.X
				if c := guide.cfg; c.From < c.To {
					msg += fmt.Sprintf(", loss %.3g → %.3g", res.Steps[c.From].Loss, res.Steps[c.To-1].Loss)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		for r := range n {
			x.SetRow(i*n+r, rows.RawRowView(r))
		}
		meter.Add(1, msg)
	}
	meter.Done()
	return x, nil
}

// sampleRows draws rows [lo, hi) of a plain run, 32 rows at a time, so
// that a DDIM step (one guided call of 64 network rows: a fraction of a
// second on 2 CPU cores, no more per row than larger calls) stays short
// enough for an interrupt to stop it within a second; rows do not depend
// on their batch.
func sampleRows(ctx context.Context, net *mnist.Networks, cfg mnist.SampleConfig, class []int, sc []float64, lo, hi int) (*mat.Dense, error) {
	const batch = 32
	x := mat.NewDense(hi-lo, mnist.Dim, nil)
	for first := lo; first < hi; first += batch {
		end := min(first+batch, hi)
		rows, err := net.SampleRowsContext(ctx, cfg, class, sc, first, end)
		if err != nil {
			return nil, err
		}
		x.Slice(first-lo, end-lo, 0, mnist.Dim).(*mat.Dense).Copy(rows)
	}
	return x, nil
}

// writeSamples renders the PNG grid and the .npy bytes first, then writes
// both together (outfile.WriteAll): after a failure neither file has
// changed and no path goes to stdout.
func writeSamples(x *mat.Dense, g sampleGrid, pngOut, npyOut string) error {
	var files []outfile.File
	if npyOut != "" {
		var b bytes.Buffer
		if err := input.WriteNPY(&b, x); err != nil {
			return err
		}
		files = append(files, outfile.File{Path: npyOut, Data: b.Bytes(), Owned: outfile.NPYOwned})
	}
	if pngOut != "" {
		var rows [][]*mat.Dense
		for i := range g.rows {
			var row []*mat.Dense
			for r := range g.n {
				row = append(row, mat.NewDense(1, mnist.Dim, x.RawRowView(i*g.n+r)))
			}
			rows = append(rows, row)
		}
		p, err := mnist.ImageGrid(g.title, "seed index", g.ylabel, rows, nil)
		if err != nil {
			return err
		}
		mnist.LabelRows(p, g.rows)
		w := max(vg.Length(g.n)*0.55*vg.Inch+1.3*vg.Inch+vg.Length(g.labelWidth())*0.08*vg.Inch, vg.Length(len([]rune(g.title)))*0.085*vg.Inch)
		raw, err := plotx.Bytes(p, w, vg.Length(len(g.rows))*0.55*vg.Inch+1.1*vg.Inch, "png")
		if err != nil {
			return err
		}
		if raw, err = outfile.MarkPNG(raw); err != nil {
			return err
		}
		files = append(files, outfile.File{Path: pngOut, Data: raw, Owned: outfile.PNGOwned})
	}
	return outfile.WriteAll(files)
}

// sampleGrid is how writeSamples lays out the PNG: len(rows) rows (their
// labels) of n samples each, x's rows in that order.
type sampleGrid struct {
	title, ylabel string
	rows          []string
	n             int
}

// labelWidth is the longest row label's length in characters.
func (g sampleGrid) labelWidth() int {
	w := 0
	for _, l := range g.rows {
		w = max(w, len([]rune(l)))
	}
	return w
}

// classGrid is the layout of class-conditional samples.
func classGrid(cls []int, n, steps int, scale float64, seed uint64, guide *sampleGuide) sampleGrid {
	title := fmt.Sprintf("DDIM %d steps, guidance scale %g, seed %d", steps, scale, seed)
	if guide != nil {
		title += ", " + guide.String()
	}
	g := sampleGrid{title: title, ylabel: "requested class (row)", n: n}
	for _, c := range cls {
		g.rows = append(g.rows, fmt.Sprint(c))
	}
	return g
}

// sameFile reports whether two paths name the same file (the same clean
// absolute path, or the same existing file).
func sameFile(a, b string) bool {
	aa, errA := filepath.Abs(a)
	bb, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == bb {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// sampleUse is what a dfx sample run does with its networks: plain
// sampling (neither), adjoint guidance, or density guidance.
type sampleUse struct {
	guide   bool
	density *sampleDensity
}

// openSampleNets loads what dfx sample runs: for plain sampling the
// ε-network alone (-model from -nets DIR or the committed set), else the
// whole set with its DF-TM networks and classifier; or the networks of the
// -checkpoint files, with the classifier for guidance.
func openSampleNets(fs *flag.FlagSet, nets, netsFrom, epsName string, ckpts []string, use sampleUse) (*mnist.Networks, error) {
	if isSet(fs, "model") {
		if spec, err := mnist.SpecByName(epsName); err != nil {
			return nil, badInput(fmt.Errorf("-model: %w", err))
		} else if spec.Scope != models.ScoreScope {
			return nil, badInput(fmt.Errorf("-model %s is not an ε-network", epsName))
		}
	}
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	var net *mnist.Networks
	switch {
	case len(ckpts) > 0:
		need, usedBy := "", "plain sampling"
		if use.guide {
			usedBy = "adjoint guidance"
		}
		if use.density != nil {
			need, usedBy = use.density.network(), "-trace "+use.density.flags.trace
		}
		if isSet(fs, "nets") && !use.guide {
			return nil, badInput(errors.New("-nets with -checkpoint: only adjoint guidance reads a network of -nets DIR " +
				"(its classifier); leave -nets out"))
		}
		if net, err = mnist.OpenFiles(backend, ckpts, need, usedBy, use.density == nil); err != nil {
			return nil, fmt.Errorf("-checkpoint: %w", err)
		}
		if use.guide {
			err = net.LoadClassifier(nets)
		}
	case !use.guide && use.density == nil:
		net, err = mnist.OpenEps(backend, nets, epsName)
	default:
		net, err = mnist.LoadNetworks(backend, nets)
	}
	if err != nil && nets != "" && (len(ckpts) == 0 || use.guide) {
		err = fmt.Errorf("%s: %w", netsFrom, err)
	}
	return net, err
}
