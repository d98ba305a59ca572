package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

const fitUsage = `usage: dfx fit [-components 10] [-per-class=true] [-rank 64] [-idle 1e-4] [-shrink 0.2] [-floor 0] [-iters 25] [-seed 1] [-test 1000] -out FILE.dfxckpt
Fits a Gaussian mixture to the training images of the IDX set in DFX_MNIST_DIR (default: MNIST), dequantised (seed 1): k-means (within each class with -per-class), each component's covariance shrunk toward its diagonal, kept full (-rank 0) or as rank r plus one variance for the rest with the idle pixels (variance < -idle) apart. Writes it as a checkpoint (atomically) that dfx ckpt verifies and dfx nll --gmm reads as an exact model (its score, Fisher and log q_t are in closed form at every t; --exact), and prints its exact bpd on the first -test dequantised test images.`

// fitProducer is the Producer of dfx fit's checkpoints: the only existing
// files that -out replaces.
const fitProducer = "fit"

func runFit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	def := mnist.SkipOptions()
	k := fs.Int("components", def.Components, "Gaussians (per class with -per-class)")
	per := fs.Bool("per-class", def.PerClass, "fit each class's images separately (the labels decide; the mixture is then class-conditional too)")
	rank := fs.Int("rank", def.Rank, "rank r of each covariance (0: full)")
	idle := fs.Float64("idle", def.Idle, "with 1 ≤ r < d: variance below which a pixel is idle in a component (0: none)")
	shrink := fs.Float64("shrink", def.Shrink, "shrinkage of each covariance toward its diagonal, in [0, 1]")
	floor := fs.Float64("floor", 0, "variance added to every covariance's diagonal (≥ 0)")
	iters := fs.Int("iters", 25, "k-means iterations (≥ 1)")
	seed := seedFlag(def.Seed)
	fs.Var(&seed, "seed", "seed of the k-means++ start")
	test := fs.Int("test", 1000, "test images to score exactly (0: none)")
	out := fs.String("out", "", "checkpoint file to write (.dfxckpt)")
	if code, ok := parseFlags(fs, args, stderr, "fit", fitUsage); !ok {
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
	if err := checkOutFile("out", *out, models.ProducedBy(fitProducer)); err != nil { // replace only dfx fit's own output
		return failErr(stderr, "fit", err)
	}
	if err := checkMNISTData(); err != nil {
		return failErr(stderr, "fit", err)
	}
	opt := mixture.FitOptions{Components: *k, PerClass: *per, Rank: *rank, Idle: *idle, Shrink: *shrink, Floor: *floor, Iters: *iters, Seed: uint64(seed)}
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
	if err := outfile.WriteAll([]outfile.File{{Path: *out, Data: raw, Owned: models.ProducedBy(fitProducer)}}); err != nil {
		return failErr(stderr, "fit", err)
	}
	abs, _ := filepath.Abs(*out)
	fmt.Fprintf(stdout, "%s\t%d components\t%.1f s", abs, rec.Components, rec.Seconds)
	if rec.TestImages > 0 {
		fmt.Fprintf(stdout, "\t%.4f ± %.4f bpd on %d dequantised test images (exact)", rec.TestBPD, rec.TestSE, rec.TestImages)
	}
	fmt.Fprintln(stdout)
	return 0
}
