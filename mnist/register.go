package mnist

import (
	"context"
	"fmt"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/toys"
)

// DefaultCandidatesDir is the folder mnist-candidates reads when the
// settings name none.
const DefaultCandidatesDir = "dfx-nets"

// CheckNets checks that dir ("" for the committed networks) holds every
// network of Specs, each a valid checkpoint for its spec.
func CheckNets(dir string) error {
	if dir == "" {
		return nil
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("networks folder %s is not a folder", dir)
	}
	for _, s := range Specs() {
		if _, _, err := LoadNetwork(dir, s.Name); err != nil {
			return fmt.Errorf("networks folder %s: %w", dir, err)
		}
	}
	return nil
}

// checkDataNets checks the data and s.NetsDir.
func checkDataNets(s report.Settings) error {
	if err := CheckData(); err != nil {
		return err
	}
	return CheckNets(s.NetsDir)
}

func checkData(report.Settings) error { return CheckData() }

// modelName is s.Model, default eps.
func modelName(s report.Settings) string {
	if s.Model == "" {
		return "eps"
	}
	return s.Model
}

func candidatesDir(s report.Settings) string {
	if s.CandidatesDir == "" {
		return DefaultCandidatesDir
	}
	return s.CandidatesDir
}

func init() {
	report.RegisterLegacy(report.Legacy{
		Name:  "adjoint",
		Doc:   "paper Figures 3–4 on MNIST: adjoint guidance with VJP vs DF-EA, the strength grid search, cost per step, and the exact-operator study (60 000-image Dirac mixture and a d = 64 Gaussian mixture)",
		Check: checkDataNets,
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			return report.One(RunAdjointStudy(ctx, c))
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name: "mnist-density",
		Doc:  "density guidance on MNIST (issue 24): samples steered to quantile levels and offsets of their log-density, exactly on a fitted Gaussian mixture and on the networks with DF-TM, DF-TM-c and Hutchinson traces, achieved bpd measured independently",
		Check: func(s report.Settings) error {
			if err := checkDataNets(s); err != nil {
				return err
			}
			if s.DensityShard != "" {
				if _, _, err := ParseShard(s.DensityShard); err != nil {
					return err
				}
				if s.DensityWork == "" {
					return fmt.Errorf("a shard (%s) needs a work folder to keep its rows in", s.DensityShard)
				}
			}
			return CheckDensityWork(s.DensityWork)
		},
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			cfg := DensityExpFull(c.Settings.NetsDir)
			if c.Profile == report.Quick {
				cfg = DensityExpQuick(c.Settings.NetsDir)
			}
			cfg.Work = c.Settings.DensityWork
			if c.Settings.DensityShard != "" {
				var err error
				if cfg.Shard, cfg.Shards, err = ParseShard(c.Settings.DensityShard); err != nil {
					return nil, err
				}
			}
			return report.One(RunDensityExp(ctx, cfg, c.LogWriter()))
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name:  "mnist-baselines",
		Doc:   "closed-form MNIST baselines: exact test bpd of Gaussians and Gaussian mixtures (full and low-rank covariances, the ε-networks' skip) fitted to the training images, with exact samples",
		Check: checkData, // NetsDir: only its classifier is read
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			cfg := report.Pick(c.Profile, BaselinesQuick, BaselinesFull)
			cfg.NetsDir = c.Settings.NetsDir
			return report.One(RunBaselines(ctx, cfg, c.LogWriter()))
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name:       "mnist-candidates",
		Doc:        "the candidate ε-networks' ELBO gain and validation bpd along training, read from their checkpoints or states (settings' CandidatesDir; CLI: DFX_MNIST_CANDIDATES, default dfx-nets)",
		Standalone: true,
		Check: func(s report.Settings) error {
			if st, err := os.Stat(candidatesDir(s)); err != nil || !st.IsDir() {
				return fmt.Errorf("candidates folder %s is not a folder (train a candidate with `dfx train <candidate> -out DIR`)", candidatesDir(s))
			}
			return nil
		},
		Run: func(_ context.Context, c report.Config) ([]report.Result, error) {
			return report.One(ReadCandidates(candidatesDir(c.Settings)))
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name:  "mnist-exact-model",
		Doc:   "every trace estimator and Fisher product on an image-scale model whose Fisher is known exactly: a Gaussian mixture fitted to MNIST, run as a network",
		Check: checkData,
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			return report.One(RunExactModel(ctx, report.Pick(c.Profile, ExactModelQuick, ExactModelFull), c.LogWriter()))
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name:       "mnist-ablation",
		Doc:        "the MNIST ε-network's design at equal training steps: ELBO gain over the skip mixture of the chosen patch network and of one change each (t sampling, dequantisation, trunk, skip)",
		Standalone: true,
		Check:      checkData,
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			return report.One(RunAblation(ctx, report.Pick(c.Profile, AblationQuick, AblationFull), c.LogWriter()))
		},
	})
	report.RegisterLegacy(report.Legacy{
		Name:       "mnist-model",
		Doc:        "one ε-network (settings' Model, default eps, from NetsDir or the committed checkpoints; CLI: DFX_MNIST_MODEL, DFX_MNIST_NETS): converged test bpd beside its skip mixture's exact bpd on the same images, and the quality of its samples",
		Standalone: true,
		Check: func(s report.Settings) error {
			parts, err := ParseModelParts(s.ModelParts)
			if err != nil {
				return err
			}
			if parts[PartQuality] { // the classifier's reference: both splits
				if err := CheckData(); err != nil {
					return err
				}
			} else if parts[PartLikelihood] { // the test images alone
				if _, err := Load(Test); err != nil {
					return err
				}
			}
			spec, err := SpecByName(modelName(s))
			if err != nil {
				return fmt.Errorf("model: %w", err)
			}
			if spec.Scope != models.ScoreScope {
				return fmt.Errorf("model: %s is not an ε-network", spec.Name)
			}
			if _, _, err := loadCheckpoint(s.NetsDir, spec.Name); err != nil { // before -out is claimed
				return err
			}
			return CheckModelWork(s.ModelWork)
		},
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			cfg := ModelEvalFull(c.Settings.NetsDir, modelName(c.Settings))
			if c.Profile == report.Quick {
				cfg = ModelEvalQuick(c.Settings.NetsDir, modelName(c.Settings))
			}
			parts, err := ParseModelParts(c.Settings.ModelParts)
			if err != nil {
				return nil, err
			}
			cfg.Work, cfg.Parts = c.Settings.ModelWork, parts
			return report.One(RunModelEval(ctx, cfg, c.LogWriter()))
		},
	})
}

// AdjointStudy is `dfx reproduce adjoint`'s one folder: the MNIST
// experiment (RunAdjoint) and the d = 64 Gaussian-mixture half of the
// exact-operator study (toys.RunAdjointGMM).
type AdjointStudy struct {
	MNIST *AdjointResult
	GMM   *toys.AdjointGMMResult
}

// RunAdjointStudy runs both halves at c's profile, on c's networks.
func RunAdjointStudy(ctx context.Context, c report.Config) (*AdjointStudy, error) {
	log := c.LogWriter()
	cfg, gcfg := AdjointFor(c.Profile), toys.AdjointGMMFor(c.Profile)
	cfg.NetsDir = c.Settings.NetsDir
	res, err := RunAdjoint(ctx, cfg, log)
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
	return &AdjointStudy{res, gmm}, nil
}

// Report implements report.Result: both halves' tables and figures.
func (a *AdjointStudy) Report() (*report.Report, error) {
	m, err := a.MNIST.Report()
	if err != nil {
		return nil, err
	}
	g, err := a.GMM.Report()
	if err != nil {
		return nil, err
	}
	rep := report.Merge(m.Name, m.Title, m, g)
	return rep, rep.Check()
}
