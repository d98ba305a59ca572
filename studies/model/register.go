package model

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// DefaultCandidatesDir is the folder mnist-candidates reads when its -dir
// names none.
const DefaultCandidatesDir = "dfx-nets"

// CandidatesConfig is mnist-candidates' one knob: the folder of the
// candidates' checkpoints or training states.
type CandidatesConfig struct {
	Dir string
}

func candidatesConfig() CandidatesConfig { return CandidatesConfig{Dir: DefaultCandidatesDir} }

func init() {
	report.Register(report.Spec[ModelEvalConfig]{
		Name: "mnist-model",
		Doc: "one ε-network (-model, default eps, from -nets or the committed checkpoints): converged test bpd beside its skip mixture's exact bpd " +
			"on the same images, and the quality of its samples",
		Standalone: true,
		Quick:      ModelEvalQuick,
		Full:       ModelEvalFull,
		Flags: func(fs *flag.FlagSet, c *ModelEvalConfig) {
			fs.StringVar(&c.Name, "model", c.Name, "the ε-network to evaluate, a network or candidate name, read from -nets or the committed checkpoints")
			fs.StringVar(&c.Checkpoint, "checkpoint", c.Checkpoint, "a weights checkpoint file (e.g. written by dfx import) whose ε-network is evaluated "+
				"instead of -model's; -model's skip mixture is then its closed-form reference")
			fs.IntVar(&c.Images, "images", c.Images, "test images of the likelihood")
			fs.IntVar(&c.Probes, "probes", c.Probes, "Hutchinson probes of the trace (on the residual of a network with a mixture skip)")
			fs.Func("parts", "the parts to compute, comma-separated likelihood,samples,quality "+
				"(default all; without quality no classifier or training images are needed)",
				func(v string) error {
					parts, err := ParseModelParts(v)
					c.Parts = parts
					return err
				})
			workstore.ShardFlag(fs, &c.Shard, "k/n (with a work folder): compute only every n-th batch of the likelihood, starting at the k-th, "+
				"into the folder's mnist-model-likelihood.shard-k-of-n.json, and write no report")
		},
		Check: checkModelEval,
		Run: func(ctx context.Context, c ModelEvalConfig, env report.Env) (report.Result, error) {
			c.Dir, c.Work = env.Nets, env.Work
			return result(RunModelEval(ctx, mnist.Problem(), mnist.Lab{}, c, env.LogWriter()))
		},
	})
	report.Register(report.Spec[BaselineConfig]{
		Name: "mnist-baselines",
		Doc: "closed-form MNIST baselines: exact test bpd of Gaussians and Gaussian mixtures (full and low-rank covariances, the ε-networks' skip) " +
			"fitted to the training images, with exact samples",
		Quick: BaselinesQuick,
		Full:  BaselinesFull,
		Check: func(BaselineConfig, report.Env) error { return mnist.CheckData() }, // -nets: only its classifier is read
		Run: func(ctx context.Context, c BaselineConfig, env report.Env) (report.Result, error) {
			c.NetsDir = env.Nets
			return result(RunBaselines(ctx, mnist.Problem(), mnist.Lab{}, c, env.LogWriter()))
		},
	})
	report.Register(report.Spec[CandidatesConfig]{
		Name:       "mnist-candidates",
		Doc:        "the candidate ε-networks' ELBO gain and validation bpd along training, read from their checkpoints or states (-dir, default dfx-nets)",
		Standalone: true,
		Quick:      candidatesConfig,
		Full:       candidatesConfig,
		Flags: func(fs *flag.FlagSet, c *CandidatesConfig) {
			fs.StringVar(&c.Dir, "dir", c.Dir, "folder of the candidate ε-networks' checkpoints or training states")
		},
		Check: func(c CandidatesConfig, _ report.Env) error {
			if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
				return fmt.Errorf("candidates folder %s is not a folder (-dir DIR, or DFX_MNIST_CANDIDATES=DIR; "+
					"train a candidate with `dfx train <candidate> -out DIR`)", c.Dir)
			}
			return nil
		},
		Run: func(_ context.Context, c CandidatesConfig, _ report.Env) (report.Result, error) {
			return result(ReadCandidates(c.Dir))
		},
	})
	report.Register(report.Spec[AblationConfig]{
		Name: "mnist-ablation",
		Doc: "the MNIST ε-network's design at equal training steps: ELBO gain over the skip mixture of the chosen patch network and of one change each " +
			"(t sampling, dequantisation, trunk, skip)",
		Quick: AblationQuick,
		Full:  AblationFull,
		Check: func(AblationConfig, report.Env) error { return mnist.CheckData() },
		Run: func(ctx context.Context, c AblationConfig, env report.Env) (report.Result, error) {
			return result(RunAblation(ctx, c, env.LogWriter()))
		},
	})
}

// checkModelEval checks, before any work, the data the parts need, the
// network (an ε-network that loads), the shard and the work folder.
func checkModelEval(c ModelEvalConfig, env report.Env) error {
	if c.part(PartQuality) { // the classifier's reference: both splits
		if err := mnist.CheckData(); err != nil {
			return err
		}
	} else if c.part(PartLikelihood) { // the test images alone
		if _, err := mnist.Load(mnist.Test); err != nil {
			return err
		}
	}
	spec, err := mnist.SpecByName(c.Name)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if spec.Scope != models.ScoreScope {
		return fmt.Errorf("model: %s is not an ε-network", spec.Name)
	}
	if _, _, err := mnist.LoadNetwork(env.Nets, spec.Name); err != nil { // before -out is claimed
		return err
	}
	if err := checkEvalCheckpoint(c); err != nil {
		return err
	}
	c.Work = env.Work
	if err := c.checkShard(); err != nil {
		return err
	}
	return CheckModelWork(c)
}

// result is r as a report.Result, nil when err is not nil (never a nil
// pointer in a non-nil interface).
func result[R report.Result](r R, err error) (report.Result, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}
