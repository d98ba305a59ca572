package mnist

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/internal/tensormat"
	"github.com/dfx-lab/dfx/models"
)

// The differentiable rewards of adjoint-guided sampling on MNIST (paper
// appendix extra_adjoint, Figures 3–4). The paper guides Stable Diffusion
// with an aesthetic predictor / PickScore, a CLIP-feature Gram style loss
// and an ArcFace identity loss; none of those networks can be had here, so
// each is replaced by the same construction on MNIST's own classifier
// (models.ClassifierNet, an MLP). Every reward is an adjoint.Loss: the
// per-row loss to minimise and its gradient with respect to the clean image
// x₀ ∈ [−1, 1]^784. The classifier rewards are one compiled GoMLX graph each
// (forward and graph.Gradient, in the classifier's dtype: float32 for the
// trained one), with float64 on the host side.

// StyleGroups is G, the number of groups a hidden layer is split into to
// make a Gram matrix (see StyleReward).
const StyleGroups = 16

// CentringMass is ε in the centroid's denominator Σw + ε (see
// CentringReward): one pixel's worth of ink, so that a blank image has a
// finite loss and gradient.
const CentringMass = 1.0

// ClassReward is the loss L(x₀) = −log p(k | x₀) of the classifier, the
// stand-in for the paper's aesthetic score / PickScore (L = f_aes: a
// scalar score of one network, maximised): guidance towards images the
// classifier reads as the digit k. One target applies to every row; else
// give one per row (target[i] for row i, and every call must then pass
// len(target) rows).
func (n *Networks) ClassReward(target ...int) (adjoint.Loss, error) {
	if n.Classifier == nil {
		return nil, errors.New("mnist: class reward: no classifier")
	}
	if len(target) == 0 {
		return nil, errors.New("mnist: class reward: no target class")
	}
	for _, k := range target {
		if k < 0 || k >= n.Classifier.K {
			return nil, fmt.Errorf("mnist: class reward: target %d outside 0…%d", k, n.Classifier.K-1)
		}
	}
	target = append([]int(nil), target...)
	return func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		b, err := checkImages("class reward", x0)
		if err != nil {
			return nil, nil, err
		}
		if len(target) != 1 && len(target) != b {
			return nil, nil, fmt.Errorf("mnist: class reward of %d targets for %d rows: %w", len(target), b, adjoint.ErrInput)
		}
		lab := make([]int32, b)
		for i := range lab {
			lab[i] = int32(target[min(i, len(target)-1)])
		}
		return n.evalReward("class", classLoss, x0, tensors.FromFlatDataAndDimensions(lab, b))
	}, nil
}

// classLoss is −log softmax(logits)[k] [B] of images x [B, d] and targets k [B].
func classLoss(scope *model.Scope, x, target *graph.Node) *graph.Node {
	logits, _ := models.ClassifierNet(scope, x)
	onehot := graph.OneHot(target, logits.Shape().Dimensions[1], logits.DType())
	return graph.Neg(graph.ReduceSum(graph.Mul(graph.LogSoftmax(logits), onehot), -1))
}

// StyleReward is a Gram-matrix style loss against the reference image ref
// [784], the stand-in for the paper's CLIP-feature style loss
// ‖clip(x₀)clip(x₀)ᵀ − clip(x_ref)clip(x_ref)ᵀ‖ (after AdjointDPM, which
// takes Gram matrices of an image encoder's features as in Gatys et al.).
// A convolutional layer's Gram matrix is channels × channels over spatial
// positions; an MLP's hidden layer has no channels, so each hidden layer h
// [width] is split into G = StyleGroups contiguous groups of m = width/G
// units, read as G "channels" at m "positions" (h [B, 512] → [B, 16, 32]),
// with Gram matrix Γ(h) = H Hᵀ/m [G, G]. The loss sums over every hidden
// layer ℓ of the classifier (models.ClassifierLayers):
//
//	L(x₀) = Σ_ℓ ‖Γ(h_ℓ(x₀)) − Γ(h_ℓ(x_ref))‖²_F / G².
//
// It is squared, unlike the paper's norm, so that it is differentiable at
// the reference itself (where L = 0). The width must be a multiple of G.
func (n *Networks) StyleReward(ref []float64) (adjoint.Loss, error) {
	r, err := n.reference("style", ref)
	if err != nil {
		return nil, err
	}
	if w := model.GetRootParamOr(n.Classifier.Store, models.ParamWidth, 128); w%StyleGroups != 0 {
		return nil, fmt.Errorf("mnist: style reward: classifier width %d is not a multiple of %d groups", w, StyleGroups)
	}
	return func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		if _, err := checkImages("style reward", x0); err != nil {
			return nil, nil, err
		}
		return n.evalReward("style", styleLoss, x0, r)
	}, nil
}

// styleLoss is the style loss [B] of images x [B, d] against ref [1, d].
func styleLoss(scope *model.Scope, x, ref *graph.Node) *graph.Node {
	b := x.Shape().Dimensions[0]
	_, hidden := models.ClassifierLayers(scope, graph.Concatenate([]*graph.Node{x, graph.ConvertDType(ref, x.DType())}, 0))
	var loss *graph.Node
	for _, h := range hidden {
		w := h.Shape().Dimensions[1]
		m := w / StyleGroups
		hr := graph.Reshape(h, b+1, StyleGroups, m)
		gram := graph.DivScalar(graph.EinsumAxes(hr, hr, [][2]int{{2, 2}}, [][2]int{{0, 0}}), float64(m)) // [B+1, G, G]
		gx := graph.Slice(gram, graph.AxisRange(0, b))
		gr := graph.BroadcastToDims(graph.StopGradient(graph.Slice(gram, graph.AxisRange(b, b+1))), b, StyleGroups, StyleGroups)
		l := graph.DivScalar(graph.ReduceSum(graph.Square(graph.Sub(gx, gr)), 1, 2), float64(StyleGroups*StyleGroups))
		if loss == nil {
			loss = l
		} else {
			loss = graph.Add(loss, l)
		}
	}
	return loss
}

// IdentityReward is L(x₀) = ‖f(x₀) − f(x_ref)‖² / ‖f(x_ref)‖² with f the
// classifier's penultimate features (models.ClassifierNet), the stand-in
// for the paper's ArcFace identity loss ‖ArcFace(x₀) − ArcFace(x_ref)‖
// (after SAG): keep the "identity" of a reference digit — its features, not
// merely its class. Squared so that it is smooth at the reference, and
// divided by the reference's squared feature norm so that its scale does
// not depend on the network (1 is as far as the zero feature vector). The
// reference's features must not all be zero.
func (n *Networks) IdentityReward(ref []float64) (adjoint.Loss, error) {
	r, err := n.reference("identity", ref)
	if err != nil {
		return nil, err
	}
	_, feat, err := n.Classifier.LogProbs(mat.NewDense(1, Dim, append([]float64(nil), ref...)))
	if err != nil {
		return nil, fmt.Errorf("mnist: identity reward: %w", err)
	}
	if mat.Norm(feat, 2) == 0 {
		return nil, errors.New("mnist: identity reward: the reference's features are all zero")
	}
	return func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		if _, err := checkImages("identity reward", x0); err != nil {
			return nil, nil, err
		}
		return n.evalReward("identity", identityLoss, x0, r)
	}, nil
}

// identityLoss is the identity loss [B] of images x [B, d] against ref [1, d].
func identityLoss(scope *model.Scope, x, ref *graph.Node) *graph.Node {
	b := x.Shape().Dimensions[0]
	_, f := models.ClassifierNet(scope, graph.Concatenate([]*graph.Node{x, graph.ConvertDType(ref, x.DType())}, 0))
	w := f.Shape().Dimensions[1]
	fx := graph.Slice(f, graph.AxisRange(0, b))
	fr := graph.StopGradient(graph.Slice(f, graph.AxisRange(b, b+1)))
	d := graph.Sub(fx, graph.BroadcastToDims(fr, b, w))
	return graph.Div(graph.ReduceSum(graph.Square(d), -1), graph.ReduceAllSum(graph.Square(fr)))
}

// CentringReward is a differentiable "aesthetic" that needs no training:
// the squared distance, in pixels², of the ink centroid from the image
// centre. With ink weights w_p = clamp((x_p + 1)/2, 0, 1) ∈ [0, 1] and
// pixel p at row r_p and column c_p (0…27),
//
//	c = Σ_p w_p (r_p − 13.5, c_p − 13.5) / (Σ_p w_p + ε),   L(x₀) = ‖c‖²,
//
// with ε = CentringMass. MNIST digits are centred by construction (NIST's
// digits were translated to put their centre of mass at the centre of the
// 28 × 28 field), so an off-centre sample is a defect a reader can see, and
// the loss can be checked by eye. Pixels outside (−1, 1) have zero
// gradient (clamped). Computed on the host in float64: it is O(d) per row
// and needs no network.
func CentringReward() adjoint.Loss {
	return func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		b, err := checkImages("centring reward", x0)
		if err != nil {
			return nil, nil, err
		}
		const side, mid = 28, 13.5
		loss, grad := make([]float64, b), mat.NewDense(b, Dim, nil)
		for i := range b {
			x, g := x0.RawRowView(i)[:Dim], grad.RawRowView(i)
			mass, sr, sc := CentringMass, 0.0, 0.0
			for p, v := range x {
				w := math.Max(0, math.Min(1, (v+1)/2))
				mass += w
				sr += w * (float64(p/side) - mid)
				sc += w * (float64(p%side) - mid)
			}
			cr, cc := sr/mass, sc/mass
			loss[i] = cr*cr + cc*cc
			// ∂c/∂w_p = ((r_p, c_p) − mid − c)/mass, ∂w_p/∂x_p = 1/2 inside the clamp
			for p, v := range x {
				if v <= -1 || v >= 1 {
					continue
				}
				g[p] = (cr*(float64(p/side)-mid-cr) + cc*(float64(p%side)-mid-cc)) / mass
			}
		}
		return loss, grad, nil
	}
}

// rewardFn builds a per-row loss [B] of images x [B, d] and one more input.
type rewardFn func(scope *model.Scope, x, extra *graph.Node) *graph.Node

// evalReward runs the compiled graph of reward kind (built by fn on first
// use and cached on n): the loss of x0 [B, d] and its gradient, ∂(Σ_b
// L_b)/∂x0, which is row b's own gradient since rows do not interact.
func (n *Networks) evalReward(kind string, fn rewardFn, x0 *mat.Dense, extra *tensors.Tensor) ([]float64, *mat.Dense, error) {
	c := n.Classifier
	dt, err := models.DTypeOf(c.Store)
	if err != nil {
		return nil, nil, err
	}
	exec := n.rewards[kind]
	if exec == nil {
		exec, err = model.NewExec(c.Backend, c.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			loss := fn(scope, in[0], in[1])
			return []*graph.Node{loss, graph.Gradient(graph.ReduceAllSum(loss), in[0])[0]}
		})
		if err != nil {
			return nil, nil, fmt.Errorf("mnist: %s reward: %w", kind, err)
		}
		if n.rewards == nil {
			n.rewards = map[string]*model.Exec{}
		}
		n.rewards[kind] = exec
	}
	b, d := x0.Dims()
	out, err := exec.Exec(tensormat.FromMatrix(dt, x0), extra)
	if err != nil {
		return nil, nil, fmt.Errorf("mnist: %s reward: %w", kind, err)
	}
	defer func() {
		for _, t := range out {
			t.MustFinalizeAll()
		}
	}()
	return tensormat.Copy(out[0]), mat.NewDense(b, d, tensormat.Copy(out[1])), nil
}

// reference checks a reference image and returns it as a [1, d] float64
// tensor (converted to the classifier's dtype inside the graph).
func (n *Networks) reference(what string, ref []float64) (*tensors.Tensor, error) {
	if n.Classifier == nil {
		return nil, fmt.Errorf("mnist: %s reward: no classifier", what)
	}
	if len(ref) != Dim {
		return nil, fmt.Errorf("mnist: %s reward: reference of %d values, want %d", what, len(ref), Dim)
	}
	for j, v := range ref {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("mnist: %s reward: reference pixel %d is %v", what, j, v)
		}
	}
	return tensors.FromFlatDataAndDimensions(append([]float64(nil), ref...), 1, Dim), nil
}

// checkImages checks that x0 is a non-empty [B, 784] matrix of finite
// values and returns B.
func checkImages(what string, x0 *mat.Dense) (int, error) {
	if x0 == nil || x0.IsEmpty() {
		return 0, fmt.Errorf("mnist: %s of no images: %w", what, adjoint.ErrInput)
	}
	b, d := x0.Dims()
	if d != Dim {
		return 0, fmt.Errorf("mnist: %s of images of dimension %d, want %d: %w", what, d, Dim, adjoint.ErrInput)
	}
	for i := range b {
		for j, v := range x0.RawRowView(i)[:d] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("mnist: %s: row %d pixel %d is %v: %w", what, i, j, v, adjoint.ErrInput)
			}
		}
	}
	return b, nil
}
