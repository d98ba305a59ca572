package mnist

import (
	"context"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/score"
)

// The Fisher operators of adjoint-guided sampling, by their labels in
// dfx/access's registry (Spec.Label: "vjp", "dfea"): the names the adjoint
// experiment keys its rows by.
var (
	OperatorVJP  = access.Must(access.OperatorSpec(access.VJPMatVecFamily, 0)).Label() // access.VJPMatVec of the unconditional ε-network (eq. Adjoint_VJP)
	OperatorDFEA = access.Must(access.OperatorSpec(access.DFEAFamily, 0)).Label()      // access.DFEA, DF endpoint approximation (eq. EA_approx)
)

// Operator returns the Fisher operator that the spec name gives
// (access.NewOperator; e.g. OperatorVJP or OperatorDFEA), built once per
// canonical name and kept on n (access.OperatorCache). The VJP operator is
// the unconditional network's (n.Net): F v ≈ (1/σ) ∂⟨ε_θ(x, ∅), v⟩/∂x, one
// forward and backward pass. DF-EA needs no network: it uses the denoiser
// ȳ of the guided ε̃ that the inner solve computed, so it approximates the
// Fisher of the guided model itself.
func (n *Networks) Operator(name string) (score.FisherOperator, error) {
	if n.ops == nil {
		n.ops = &access.OperatorCache{Net: n.Net}
	}
	op, err := n.ops.Operator(name)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	return op, nil
}

// GuidedSample draws one image per class by adjoint-guided DDIM (η = 0,
// adjoint.Guide.Sample) with classifier-free guidance of scale scale
// (CFGModel) and the loss reward (per row; see the rewards in rewards.go),
// the adjoint pass using the Fisher operator op ("vjp" or "dfea"). Row i
// starts from InitialNoise(seed, i, i+1), as in Networks.Sample, and the
// time grid and DDIM step are Sample's: with cfg.Strength = 0 (or an empty
// window) the images are Sample's with Steps = cfg.Steps, bit for bit when
// Sample evaluates the rows in one batch (≤ SampleConfig.Batch rows; the
// float32 network's last bits depend on the batch size). It
// returns the images at t_min [B, 784] (not clipped) and the per-step
// statistics. reward may be nil when the window is empty.
func GuidedSample(ctx context.Context, nets *Networks, cls []int, scale float64, reward adjoint.Loss, op string, cfg adjoint.Config,
	seed uint64) (*adjoint.Result, error) {
	return GuidedSampleRows(ctx, nets, cls, scale, reward, op, cfg, seed, 0, len(cls))
}

// GuidedSampleRows is GuidedSample for rows [lo, hi) of a run (the same
// images as GuidedSample gives for those rows, to float32 rounding, when
// reward treats rows alike): reward sees hi − lo rows.
func GuidedSampleRows(ctx context.Context, nets *Networks, cls []int, scale float64, reward adjoint.Loss, op string, cfg adjoint.Config, seed uint64,
	lo, hi int) (*adjoint.Result, error) {
	if nets == nil {
		return nil, fmt.Errorf("mnist: guided sampling without networks")
	}
	if lo < 0 || hi > len(cls) || lo >= hi {
		return nil, fmt.Errorf("mnist: rows [%d, %d) of %d classes", lo, hi, len(cls))
	}
	for _, k := range cls[lo:hi] {
		if k < 0 || k > 9 {
			return nil, fmt.Errorf("mnist: class %d outside 0…9", k)
		}
	}
	operator, err := nets.Operator(op)
	if err != nil {
		return nil, err
	}
	g := adjoint.Guide{Schedule: Schedule(), Model: nets.CFGModel(cls[lo:hi], scale), Operator: operator, Loss: reward}
	res, err := g.Sample(ctx, InitialNoise(seed, lo, hi), cfg)
	if err != nil {
		return nil, fmt.Errorf("mnist: guided sampling: %w", err)
	}
	return res, nil
}
