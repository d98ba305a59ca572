package toys

import (
	"context"
	"fmt"
	"io"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/problem"
)

// ProblemConfig is a toy problem: N points of Dataset drawn with DataSeed
// (their Dirac mixture is the exact reference), a schedule, and its
// networks — one triple (score ε̂_θ, DF-TM t_θ, centred ν_θ) per TrainSeeds
// entry, trained with Train.
type ProblemConfig struct {
	Dataset  string // a name of Generators (the paper: "checkerboard")
	N        int    // data set size (the paper: 5 000)
	DataSeed uint64
	Schedule string // schedule.ByName (the paper: "ve")

	Train      TrainConfig
	TrainSeeds []uint64
	// Checkpoints is the folder of saved networks ("" : never saved); an
	// existing checkpoint is loaded unless Retrain. Embedded also looks for
	// the checkpoint among those compiled into the binary (toys/checkpoints).
	Checkpoints string
	Embedded    bool
	Retrain     bool
}

// QuickProblem is dataset with small networks trained for a few hundred
// steps, one seed, nothing saved.
func QuickProblem(dataset string) ProblemConfig {
	return ProblemConfig{Dataset: dataset, N: 5000, DataSeed: 1, Schedule: "ve", Train: QuickTrain(), TrainSeeds: []uint64{1}}
}

// Published is dataset with its committed networks (toys/checkpoints,
// compiled in): three seeds of FullTrain on the checkerboard, one seed of
// 3 000 steps on every other data set.
func Published(dataset string) ProblemConfig {
	c := QuickProblem(dataset)
	c.Train, c.TrainSeeds, c.Embedded = FullTrain(), []uint64{1, 2, 3}, true
	if dataset != "checkerboard" {
		c.Train.Steps, c.TrainSeeds = 3000, []uint64{1}
	}
	return c
}

// OtherDatasets lists the generators other than the paper's checkerboard.
func OtherDatasets() []string {
	var out []string
	for n := range Generators {
		if n != "checkerboard" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// RetrainDir is the folder a retraining of the committed networks
// rewrites, relative to the working directory (the repository root).
const RetrainDir = "toys/checkpoints"

// Learned are the networks of a ProblemConfig, one set per training seed,
// with their loss curves and how they were obtained.
type Learned struct {
	Nets   []*Networks
	Losses []LossCurve
	Notes  string // "k networks trained, m loaded from checkpoints"
}

// Problem is the published configuration of the named data set as a
// problem (see ProblemConfig.Problem).
func Problem(name string) (*problem.Problem, error) { return Published(name).Problem() }

// Problem is c as a problem of dimension 2: Train draws the N points, Exact
// is their Dirac mixture, Networks the first training seed's networks
// (loaded from the folder nets, else as c finds them; trained where
// missing).
func (c ProblemConfig) Problem() (*problem.Problem, error) {
	sch, err := schedule.ByName(c.Schedule, schedule.Params{})
	if err != nil {
		return nil, fmt.Errorf("toys: %w", err)
	}
	train := func(context.Context) (*mat.Dense, error) { return Sample(c.Dataset, c.N, c.DataSeed) }
	return &problem.Problem{
		Name: c.Dataset, Dim: 2, Schedule: sch, Train: train,
		Exact: func(ctx context.Context) (mixture.Mixture, error) {
			data, err := train(ctx)
			if err != nil {
				return nil, err
			}
			return mixture.NewDirac(data, nil)
		},
		Networks: func(ctx context.Context, nets string) (*problem.Networks, error) {
			data, err := train(ctx)
			if err != nil {
				return nil, err
			}
			one := c
			one.TrainSeeds = c.TrainSeeds[:min(1, len(c.TrainSeeds))]
			if nets != "" {
				one.Checkpoints = nets
			}
			l, err := ObtainNetworks(ctx, one, sch, data, io.Discard)
			if err != nil {
				return nil, err
			}
			if len(l.Nets) == 0 {
				return nil, fmt.Errorf("toys %s: no training seed", c.Dataset)
			}
			return &problem.Networks{Net: l.Nets[0].Net()}, nil
		},
	}, nil
}
