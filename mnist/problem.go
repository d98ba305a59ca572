package mnist

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/problem"
)

// Problem is MNIST (the IDX files of DataDir) as a problem: the training
// and test images scaled to [-1, 1], the Dirac mixture of the 60 000
// training images as the exact reference, the committed (or a folder's)
// networks.
func Problem() *problem.Problem {
	return &problem.Problem{
		Name:     "mnist",
		Dim:      28 * 28,
		Schedule: Schedule(),
		Image:    problem.ImageShape{H: 28, W: 28, C: 1, Levels: 256},
		Train:    scaledSplit(Train),
		Test:     scaledSplit(Test),
		Exact: func(ctx context.Context) (mixture.Mixture, error) {
			y, err := scaledSplit(Train)(ctx)
			if err != nil {
				return nil, err
			}
			return mixture.NewDirac(y, nil)
		},
		Networks: func(_ context.Context, nets string) (*problem.Networks, error) {
			n, err := OpenNetworks(nets)
			if err != nil {
				return nil, err
			}
			return n.problemNetworks(), nil
		},
		Dequantized: func(ctx context.Context, n int, seed uint64) (*mat.Dense, error) {
			set, err := Load(Test)
			if err != nil {
				return nil, err
			}
			return set.DequantizedContext(ctx, 0, n, seed)
		},
	}
}

// problemNetworks are n in the problem's contract: the unconditional Net,
// the classifier, the guided sampler and the training records.
func (n *Networks) problemNetworks() *problem.Networks {
	recs := map[string]*problem.TrainRecord{}
	for name, r := range n.Records {
		recs[name] = &problem.TrainRecord{Steps: r.Steps, Seconds: r.Seconds, Machine: r.Machine, Backend: r.Backend, Curve: r.Curve, Accuracy: r.Accuracy}
	}
	out := &problem.Networks{Net: n.Net, Classifier: classifier{n}, Classes: 10, Backend: n.Backend.Name(), Records: recs,
		Sample: func(ctx context.Context, steps int, seed uint64, class []int, scale []float64) (*mat.Dense, error) {
			return n.SampleContext(ctx, SampleConfig{Steps: steps, Seed: seed}, class, scale)
		}}
	if rec := n.Records["eps"]; rec != nil {
		out.About = fmt.Sprintf("ε-network %s: %d steps on %s", rec.Net, rec.Steps, rec.Machine)
	}
	return out
}

// classifier is the networks' classifier as a problem.Classifier.
type classifier struct{ n *Networks }

func (c classifier) LogProbs(x *mat.Dense) (*mat.Dense, error) {
	lp, _, err := c.n.Classifier.LogProbs(x)
	return lp, err
}

// scaledSplit reads split s's images, every one, scaled to [-1, 1].
func scaledSplit(s Split) func(context.Context) (*mat.Dense, error) {
	return func(context.Context) (*mat.Dense, error) {
		set, err := Load(s)
		if err != nil {
			return nil, err
		}
		return set.Scaled(0, set.Images.N)
	}
}
