package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// fitAbout follows fit's usage line (fitUsage) in -h.
const fitAbout = `Fits a Gaussian mixture to the training images of the IDX set in DFX_MNIST_DIR (default: MNIST),
dequantised (seed 1): k-means (within each class with -per-class), each component's covariance shrunk toward its
diagonal, kept full (-rank 0) or as rank r plus one variance for the rest with the idle pixels (variance < -idle) apart.
Writes it as a checkpoint (atomically) that dfx ckpt verifies and dfx nll --gmm reads as an exact model (its score,
Fisher and log q_t are in closed form at every t; --exact), and prints its exact bpd on the first -test dequantised test
images.`

// fitProducer is the Producer of dfx fit's checkpoints: the only existing
// files that -out replaces.
const fitProducer = "fit"

// fitUsageFlags are the flags fit's usage line shows with their defaults.
var fitUsageFlags = []string{"components", "per-class", "rank", "idle", "shrink", "floor", "iters", "seed", "test"}

// fitUsage is fit's usage line, its defaults read from the flags
// themselves (so the text cannot drift from them), then fitAbout.
func fitUsage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("usage: dfx fit")
	for _, n := range fitUsageFlags {
		f := fs.Lookup(n)
		if _, isBool := f.Value.(interface{ IsBoolFlag() bool }); isBool {
			fmt.Fprintf(&b, " [-%s=%s]", n, f.DefValue)
		} else {
			fmt.Fprintf(&b, " [-%s %s]", n, f.DefValue)
		}
	}
	b.WriteString(" -out FILE.dfxckpt\n" + fitAbout)
	return b.String()
}

// fitArgs are dfx fit's flags as parsed.
type fitArgs struct {
	k, rank, iters, test *int
	per                  *bool
	idle, shrink, floor  *float64
	seed                 seedFlag
	out                  *string
}

// fitFlags registers dfx fit's flags.
func fitFlags() (*flag.FlagSet, *fitArgs) {
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	def := mnist.SkipOptions()
	a := &fitArgs{seed: seedFlag(def.Seed)}
	a.k = fs.Int("components", def.Components, "Gaussians (per class with -per-class)")
	a.per = fs.Bool("per-class", def.PerClass, "fit each class's images separately (the labels decide; the mixture is then class-conditional too)")
	a.rank = fs.Int("rank", def.Rank, "rank r of each covariance (0: full)")
	a.idle = fs.Float64("idle", def.Idle, "with 1 ≤ r < d: variance below which a pixel is idle in a component (0: none)")
	a.shrink = fs.Float64("shrink", def.Shrink, "shrinkage of each covariance toward its diagonal, in [0, 1]")
	a.floor = fs.Float64("floor", 0, "variance added to every covariance's diagonal (≥ 0)")
	a.iters = fs.Int("iters", 25, "k-means iterations (≥ 1)")
	fs.Var(&a.seed, "seed", "seed of the k-means++ start")
	a.test = fs.Int("test", 1000, "test images to score exactly (0: none; at most the test set's)")
	a.out = fs.String("out", "", "checkpoint file to write (.dfxckpt)")
	return fs, a
}

func runFit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, a := fitFlags()
	k, per, rank, idle, shrink, floor, iters, test, out := a.k, a.per, a.rank, a.idle, a.shrink, a.floor, a.iters, a.test, a.out
	seed := &a.seed
	if code, ok := parseFlags(fs, args, stderr, "fit", fitUsage(fs)); !ok {
		return code
	}
	switch {
	case *out == "":
		return fail(stderr, "fit", fmt.Errorf("-out must name the checkpoint file to write"))
	case *k < 1:
		return fail(stderr, "fit", fmt.Errorf("-components must be ≥ 1, got %d", *k))
	case *rank < 0 || *rank > mnist.Dim:
		return fail(stderr, "fit", fmt.Errorf("-rank must be in [0, %d], got %d", mnist.Dim, *rank))
	case math.IsNaN(*idle) || *idle < 0 || math.IsInf(*idle, 0):
		return fail(stderr, "fit", fmt.Errorf("-idle must be finite and ≥ 0, got %g", *idle))
	case *idle > 0 && (*rank == 0 || *rank == mnist.Dim) && isSet(fs, "idle"):
		return fail(stderr, "fit", fmt.Errorf("-idle applies to a low rank (1 ≤ -rank < %d)", mnist.Dim))
	case math.IsNaN(*shrink) || *shrink < 0 || *shrink > 1:
		return fail(stderr, "fit", fmt.Errorf("-shrink must be in [0, 1], got %g", *shrink))
	case math.IsNaN(*floor) || *floor < 0 || math.IsInf(*floor, 0):
		return fail(stderr, "fit", fmt.Errorf("-floor must be finite and ≥ 0, got %g", *floor))
	case *iters < 1:
		return fail(stderr, "fit", fmt.Errorf("-iters must be ≥ 1, got %d", *iters))
	case *test < 0 || *test > 10000:
		return fail(stderr, "fit", fmt.Errorf("-test must be in [0, 10000], got %d", *test))
	}
	if err := checkOutFile("out", *out, checkpoint.ProducedBy(fitProducer)); err != nil { // replace only dfx fit's own output
		return failErr(stderr, "fit", err)
	}
	if err := checkBackend(); err != nil { // the checkpoint is built with it, after the fit
		return failErr(stderr, "fit", err)
	}
	if err := checkFitSizes(*k, *per, *test); err != nil {
		return failErr(stderr, "fit", err)
	}
	if err := checkMNISTData(); err != nil {
		return failErr(stderr, "fit", err)
	}
	opt := mixture.FitOptions{Components: *k, PerClass: *per, Rank: *rank, Idle: *idle, Shrink: *shrink, Floor: *floor, Iters: *iters, Seed: uint64(*seed)}
	if opt.Rank == 0 || opt.Rank == mnist.Dim {
		opt.Idle = 0
	}
	c, rec, err := mnist.FitMixtureCheckpoint(ctx, opt, *test)
	if err != nil {
		return failErr(stderr, "fit", err)
	}
	if err := ctx.Err(); err != nil {
		return failErr(stderr, "fit", err)
	}
	c.Header.Producer = fitProducer
	raw, err := c.Encode()
	if err != nil {
		return failErr(stderr, "fit", err)
	}
	if err := outfile.WriteAll([]outfile.File{{Path: *out, Data: raw, Owned: checkpoint.ProducedBy(fitProducer)}}); err != nil {
		return failErr(stderr, "fit", err)
	}
	abs, _ := filepath.Abs(*out)
	fmt.Fprintf(stdout, "%s\t%d components\t%.1f s", abs, rec.Components, rec.Seconds)
	if rec.TestImages > 0 {
		if math.IsNaN(rec.TestSE) {
			fmt.Fprintf(stdout, "\t%.4f bpd on %d dequantised test image (exact; no SE from one image)", rec.TestBPD, rec.TestImages)
		} else {
			fmt.Fprintf(stdout, "\t%.4f ± %.4f bpd on %d dequantised test images (exact)", rec.TestBPD, rec.TestSE, rec.TestImages)
		}
	}
	fmt.Fprintln(stdout)
	return 0
}

// checkFitSizes checks -components and -test against the sizes of the
// data set, read from its IDX headers and label files before the images
// are loaded: k-means needs at least k images (in every class with
// -per-class), and -test cannot exceed the test set.
func checkFitSizes(k int, perClass bool, test int) error {
	set := func(split string) string {
		if d := os.Getenv("DFX_MNIST_DIR"); d != "" {
			return "the " + split + " set in DFX_MNIST_DIR=" + d
		}
		return "the MNIST " + split + " set"
	}
	n, perLabel, err := mnist.Count(mnist.Train)
	if err != nil {
		return mnistDataErr(err)
	}
	if !perClass && n < k {
		return badInput(fmt.Errorf("-components %d: %s holds %d images, fewer than the components", k, set("training"), n))
	}
	if perClass {
		for _, l := range slices.Sorted(maps.Keys(perLabel)) {
			if perLabel[l] < k {
				return badInput(fmt.Errorf("-components %d with -per-class: class %d of %s has %d images, fewer than "+
					"the components", k, l, set("training"), perLabel[l]))
			}
		}
	}
	if test == 0 {
		return nil
	}
	nt, _, err := mnist.Count(mnist.Test)
	if err != nil {
		return mnistDataErr(err)
	}
	if test > nt {
		return badInput(fmt.Errorf("-test %d: %s holds %d images", test, set("test"), nt))
	}
	return nil
}
