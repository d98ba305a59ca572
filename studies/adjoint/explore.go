package adjoint

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
)

// AdjointExplore is one adjoint-guided run towards a digit against the
// unguided run from the same noise.
type AdjointExplore struct {
	Target            int
	Operator          string
	Config            dfxadjoint.Config
	Unguided, Guided  *mat.Dense // [n, 784], clipped
	LossU, LossG      []float64  // −log p(target | image)
	EvalsU, EvalsG    int        // ε̂ evaluations
	SecondsU, Seconds float64
}

// ExploreAdjoint draws n unconditional images (CFG scale 0) and the same
// images guided by the class reward towards target with the Fisher operator
// op (mnist.OperatorVJP or mnist.OperatorDFEA) on the guidance window cfg.From…cfg.To.
func ExploreAdjoint(ctx context.Context, nets *mnist.Networks, target int, op string, cfg dfxadjoint.Config, n int, seed uint64) (*AdjointExplore, error) {
	reward, err := nets.ClassReward(target)
	if err != nil {
		return nil, err
	}
	cls := make([]int, n) // class 0 at scale 0: the unconditional model
	res := &AdjointExplore{Target: target, Operator: op, Config: cfg}
	un := cfg
	un.From, un.To = 0, 0
	u, err := mnist.GuidedSample(ctx, nets, cls, 0, reward, op, un, seed)
	if err != nil {
		return nil, err
	}
	g, err := mnist.GuidedSample(ctx, nets, cls, 0, reward, op, cfg, seed)
	if err != nil {
		return nil, err
	}
	res.Unguided, res.Guided = mnist.Clip(u.X), mnist.Clip(g.X)
	res.EvalsU, res.EvalsG, res.SecondsU, res.Seconds = u.ModelEvals, g.ModelEvals, u.Elapsed.Seconds(), g.Elapsed.Seconds()
	if res.LossU, _, err = reward(res.Unguided); err != nil {
		return nil, err
	}
	if res.LossG, _, err = reward(res.Guided); err != nil {
		return nil, err
	}
	return res, nil
}

// Report is a two-row table (unguided, guided) and the two rows of images.
func (r *AdjointExplore) Report() (*report.Report, error) {
	row := func(name string, loss []float64, evals int, sec float64) []report.Cell {
		m, se := stats.MeanSE(loss)
		return []report.Cell{report.Text(name), report.Float(m), report.Float(se), report.Int(evals), report.Float(sec)}
	}
	c := r.Config
	t := &report.Table{Name: "adjoint",
		Title: fmt.Sprintf("### Towards the digit %d with %s, guided steps %d…%d of %d, strength %g", r.Target, r.Operator, c.From, c.To, c.Steps, c.Strength),
		Columns: []report.Column{{Name: "sampler"}, {Name: "mean −log p(target|x) (nats)", Format: "%.3f"}, {Name: "± SE", Format: "%.3f"},
			{Name: "ε̂ evaluations"}, {Name: "time", Unit: "s", Format: "%.2f s"}}, Align: "lrrrr",
		Cells: [][]report.Cell{row("unguided", r.LossU, r.EvalsU, r.SecondsU), row("guided ("+r.Operator+")", r.LossG, r.EvalsG, r.Seconds)},
		Notes: []string{fmt.Sprintf("Same initial noise for both rows; %d inner DDIM steps per guided step, normalised gradient.", c.InnerSteps)}}
	fig := &report.Figure{Name: "adjoint.png", Caption: "unguided (top) and guided (bottom) images from the same noise, −log p(target|x) under each",
		Render: func(format string) ([]byte, error) {
			return plotx.ImageRows(fmt.Sprintf("towards %d: unguided (top), %s-guided (bottom)", r.Target, r.Operator), "seed", []string{"unguided", r.Operator},
				28, 28, [][]*mat.Dense{plotx.SplitRows(r.Unguided), plotx.SplitRows(r.Guided)}, [][]float64{r.LossU, r.LossG}, format)
		}}
	return &report.Report{Name: "adjoint-explore", Tables: []*report.Table{t}, Figures: []*report.Figure{fig}}, nil
}
