package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/toys"
)

func init() {
	experiments["mnist"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		cfg := mnist.FullConfig()
		if quick {
			cfg = mnist.QuickConfig()
		}
		cfg.NetsDir = os.Getenv("DFX_MNIST_NETS")
		res, err := mnist.Run(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "mnist: computed in %.1fs\n", res.Elapsed.Seconds())
		return []report.Result{res}, nil
	}
}

func init() {
	experiments["adjoint"] = func(ctx context.Context, quick bool, log io.Writer) ([]report.Result, error) {
		cfg, gcfg := mnist.AdjointFullConfig(), toys.AdjointGMMFull()
		if quick {
			cfg, gcfg = mnist.AdjointQuickConfig(), toys.AdjointGMMQuick()
		}
		cfg.NetsDir = os.Getenv("DFX_MNIST_NETS")
		res, err := mnist.RunAdjoint(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "adjoint: MNIST computed in %.1fs\n", res.Elapsed.Seconds())
		fmt.Fprintf(log, "adjoint: d = %d Gaussian-mixture study …\n", gcfg.Dim)
		gmm, err := toys.RunAdjointGMM(ctx, gcfg)
		if err != nil {
			return nil, fmt.Errorf("adjoint: Gaussian-mixture study: %w", err)
		}
		fmt.Fprintf(log, "adjoint: Gaussian-mixture study computed in %.1fs\n", gmm.Elapsed.Seconds())
		return []report.Result{adjointResult{res, gmm}}, nil
	}
	experimentDocs["adjoint"] = "paper Figures 3–4 on MNIST: adjoint guidance with VJP vs DF-EA, the strength grid search, cost per step, and the exact-operator study (60 000-image Dirac mixture and a d = 64 Gaussian mixture)"
}

// adjointResult is `dfx reproduce adjoint`'s one folder: the MNIST
// experiment and the d = 64 Gaussian-mixture half of the exact-operator study.
type adjointResult struct {
	mnist *mnist.AdjointResult
	gmm   *toys.AdjointGMMResult
}

// Report implements report.Result.
func (a adjointResult) Report() (*report.Report, error) {
	m, err := a.mnist.Report()
	if err != nil {
		return nil, err
	}
	g, err := a.gmm.Report()
	if err != nil {
		return nil, err
	}
	rep := report.Merge(m.Name, m.Title, m, g)
	return rep, rep.Check()
}

// register adds an experiment with a full and a quick configuration
// (made when it runs, so that they may read the environment) and one Run.
func register[C any, R report.Result](name, doc string, full, quick func() C, run func(context.Context, C, io.Writer) (R, error)) {
	experiments[name] = func(ctx context.Context, q bool, log io.Writer) ([]report.Result, error) {
		cfg := full
		if q {
			cfg = quick
		}
		res, err := run(ctx, cfg(), log)
		if err != nil {
			return nil, err
		}
		return []report.Result{res}, nil
	}
	experimentDocs[name] = doc
}

func init() {
	withNets := func(c mnist.BaselineConfig) mnist.BaselineConfig { c.NetsDir = os.Getenv("DFX_MNIST_NETS"); return c }
	register("mnist-baselines", "closed-form MNIST baselines: exact test bpd of Gaussians and Gaussian mixtures (full and low-rank covariances, the ε-networks' skip) fitted to the training images, with exact samples",
		func() mnist.BaselineConfig { return withNets(mnist.BaselinesFull()) }, func() mnist.BaselineConfig { return withNets(mnist.BaselinesQuick()) }, mnist.RunBaselines)
	readCandidates := func(context.Context, string, io.Writer) (*mnist.CandidatesResult, error) {
		return mnist.ReadCandidates(candidatesDir())
	}
	register("mnist-candidates", "the candidate ε-networks' ELBO gain and validation bpd along training, read from their checkpoints or states in DFX_MNIST_CANDIDATES (default dfx-nets)",
		candidatesDir, candidatesDir, readCandidates)
	register("mnist-exact-model", "every trace estimator and Fisher product on an image-scale model whose Fisher is known exactly: a Gaussian mixture fitted to MNIST, run as a network",
		mnist.ExactModelFull, mnist.ExactModelQuick, mnist.RunExactModel)
	register("mnist-ablation", "the MNIST ε-network's design at equal training steps: ELBO gain over the skip mixture of the chosen patch network and of one change each (t sampling, dequantisation, trunk, skip)",
		mnist.AblationFull, mnist.AblationQuick, mnist.RunAblation)
	model := func() (string, string) {
		name := os.Getenv("DFX_MNIST_MODEL")
		if name == "" {
			name = "eps"
		}
		return os.Getenv("DFX_MNIST_NETS"), name
	}
	register("mnist-model", "one ε-network (DFX_MNIST_MODEL, default eps, from DFX_MNIST_NETS or the committed checkpoints): converged test bpd beside its skip mixture's exact bpd on the same images, and the quality of its samples",
		func() mnist.ModelEvalConfig { return mnist.ModelEvalFull(model()) }, func() mnist.ModelEvalConfig { return mnist.ModelEvalQuick(model()) }, mnist.RunModelEval)
}

// candidatesDir is the folder dfx reproduce mnist-candidates reads
// (DFX_MNIST_CANDIDATES, default dfx-nets).
func candidatesDir() string {
	if d := os.Getenv("DFX_MNIST_CANDIDATES"); d != "" {
		return d
	}
	return "dfx-nets"
}
