package density

import (
	"context"
	"flag"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
)

// The study's two experiments: "density" on the analytic Gaussian-mixture
// problems (toys.GMM), "mnist-density" on mnist.Problem().
func init() {
	report.Register(report.Spec[GMMConfig]{
		Name: "density", Doc: "density guidance on analytic Gaussian mixtures: quantile and offset targets, exact and learned traces",
		Quick: GMMQuick, Full: GMMFull,
		Run: func(ctx context.Context, c GMMConfig, _ report.Env) (report.Result, error) { return RunGMM(ctx, c) },
	})
	report.Register(report.Spec[Config]{
		Name: "mnist-density",
		Doc: "density guidance on MNIST: samples steered to quantile levels and offsets of their log-density, exactly on a fitted Gaussian mixture " +
			"and on the networks with DF-TM, DF-TM-c and Hutchinson traces, achieved bpd measured independently",
		Quick: MNISTQuick, Full: MNISTFull,
		Flags: func(fs *flag.FlagSet, c *Config) {
			workstore.ShardFlag(fs, &c.Shard, "k/n (with a work folder): compute only every n-th row, starting at the k-th, into the folder's "+
				"density-<profile>.shard-k-of-n.json, and write no report")
		},
		Check: checkMNIST,
		Run: func(ctx context.Context, c Config, env report.Env) (report.Result, error) {
			return runImages(ctx, mnistProblem(c), c, env)
		},
	})
}

// checkMNIST checks, before any work, the data, the networks folder, the
// shard and the work folder's files.
func checkMNIST(c Config, env report.Env) error {
	if err := mnist.CheckData(); err != nil {
		return err
	}
	if err := mnist.CheckNets(env.Nets); err != nil {
		return err
	}
	if c.Shard != "" {
		if _, err := workstore.ParseShard(c.Shard); err != nil {
			return err
		}
		if env.Work == "" {
			return fmt.Errorf("a shard (%s) needs a work folder to keep its rows in", c.Shard)
		}
	}
	return workstore.Check("mnist-density", env.Work, MNISTQuick().stem(), MNISTFull().stem())
}

// mnistProblem is MNIST for the study: its baseline is the Gaussian
// mixture fitted to the dequantised training images with c.Mixture, scored
// on the first 1 000 dequantised test images; row i of the prior noise is
// mnist.InitialNoise's.
func mnistProblem(c Config) imageProblem {
	p := mnist.Problem()
	p.Baseline = func(ctx context.Context) (*mixture.Gaussian, error) { return mnist.FitMixtureContext(ctx, c.Mixture) }
	return imageProblem{Problem: p, who: "mnist-density",
		noise: func(seed uint64, n int) *mat.Dense { return mnist.InitialNoise(seed, 0, n) },
		testBPD: func(g *mixture.Gaussian) (float64, error) {
			m, _, err := mnist.MixtureBPD(g, 1000)
			return m, err
		}}
}
