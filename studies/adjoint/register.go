package adjoint

import (
	"context"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/mnist"
)

// Config is `dfx reproduce adjoint`: the guidance study on MNIST (its
// classifier rewards) and the exact-operator study on a Gaussian mixture.
type Config struct {
	MNIST GuidanceConfig
	GMM   GMMConfig
}

// Quick runs every part at toy size (tests and the notebook).
func Quick() Config { return Config{MNIST: MNISTQuick(), GMM: GMMQuick()} }

// Full is the committed profile.
func Full() Config { return Config{MNIST: MNISTFull(), GMM: GMMFull()} }

// mnistRewards are MNIST's classifier rewards on the networks of nets.
func mnistRewards(nets string) (Rewards, error) { return mnist.OpenRewards(nets) }

// MNISTFull is the committed profile of the guidance study on MNIST.
func MNISTFull() GuidanceConfig {
	return GuidanceConfig{
		Profile: report.Full, Seed: 1, RewardSet: mnistRewards,
		Rewards: []string{mnist.RewardClass, mnist.RewardStyle, mnist.RewardIdentity, mnist.RewardCentring},
		Seeds:   64, Steps: 50, WindowEnd: 35, Guided: []int{0, 5, 10, 15, 20}, InnerSteps: 4,
		Strengths: []float64{0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5}, GridSeeds: 32, Fig4Seeds: 8,
		CostBatches: []int{1, 64}, CostRounds: 5,
		Exact: ExactConfig{Seeds: 8, Guided: 20, ProbeEvery: 5, Reward: mnist.RewardClass},
	}
}

// MNISTQuick is the guidance study on MNIST at toy size.
func MNISTQuick() GuidanceConfig {
	return GuidanceConfig{
		Profile: report.Quick, Seed: 1, RewardSet: mnistRewards, Rewards: []string{mnist.RewardClass, mnist.RewardCentring},
		Seeds: 4, Steps: 10, WindowEnd: 7, Guided: []int{0, 2, 4}, InnerSteps: 2,
		Strengths: []float64{0.1, 0.3}, GridSeeds: 2, Fig4Seeds: 2,
		CostBatches: []int{1}, CostRounds: 1,
		Exact: ExactConfig{Seeds: 2, Guided: 2, ProbeEvery: 2, Reward: mnist.RewardClass, Atoms: 2000},
	}
}

func init() {
	report.Register(report.Spec[Config]{
		Name: "adjoint",
		Doc: "paper Figures 3–4 on MNIST: adjoint guidance with VJP vs DF-EA, the strength grid search, cost per step, " +
			"and the exact-operator study (60 000-image Dirac mixture and a d = 64 Gaussian mixture)",
		Quick: Quick,
		Full:  Full,
		Check: func(_ Config, env report.Env) error {
			if err := mnist.CheckData(); err != nil {
				return err
			}
			return mnist.CheckNets(env.Nets)
		},
		Run: func(ctx context.Context, c Config, env report.Env) (report.Result, error) { return Run(ctx, c, env) },
	})
}

// Study is `dfx reproduce adjoint`'s one folder: the guidance study on
// MNIST and the exact-operator study on the Gaussian mixture.
type Study struct {
	MNIST *GuidanceResult
	GMM   *GMMResult
}

// Run runs both parts of c on env's networks.
func Run(ctx context.Context, c Config, env report.Env) (*Study, error) {
	log := env.LogWriter()
	res, err := RunGuidance(ctx, mnist.Problem(), c.MNIST, env)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "adjoint: MNIST computed in %.1fs\n", res.Elapsed.Seconds())
	fmt.Fprintf(log, "adjoint: d = %d Gaussian-mixture study …\n", c.GMM.Dim)
	gmm, err := RunGMM(ctx, c.GMM)
	if err != nil {
		return nil, fmt.Errorf("adjoint: Gaussian-mixture study: %w", err)
	}
	fmt.Fprintf(log, "adjoint: Gaussian-mixture study computed in %.1fs\n", gmm.Elapsed.Seconds())
	return &Study{res, gmm}, nil
}

// Report implements report.Result: both parts' tables and figures in one
// folder.
func (a *Study) Report() (*report.Report, error) {
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
