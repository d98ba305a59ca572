package models

import (
	"errors"
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/tensormat"
)

// ClassifierScope is the scope of the image classifier (objective Classify).
const ClassifierScope = "classifier"

// ParamShiftAugment is the largest random translation, in pixels, applied to
// square images (d = side²) while training the classifier (0: none).
const ParamShiftAugment = "shift_augment"

// ClassifierNet is a clean-image classifier: an MLP of ParamDepth hidden
// layers of ParamWidth units with the store's activation, on x ∈ [−1, 1]^d.
// It returns the logits [B, K] (K = ParamNumClasses) and the last hidden
// layer [B, width], the penultimate features that stand in for feature and
// identity metrics.
func ClassifierNet(scope *model.Scope, x *graph.Node) (logits, features *graph.Node) {
	logits, hidden := ClassifierLayers(scope, x)
	if len(hidden) == 0 { // depth 0: a linear classifier of x
		return logits, x
	}
	return logits, hidden[len(hidden)-1]
}

// ClassifierLayers is ClassifierNet returning every hidden layer [B, width]
// (ParamDepth of them, the input side first, none for depth 0; the last is ClassifierNet's
// features): the style reward's Gram matrices are taken over all of them.
func ClassifierLayers(scope *model.Scope, x *graph.Node) (logits *graph.Node, hidden []*graph.Node) {
	scope = scope.At(ClassifierScope)
	width := model.GetParamOr(scope, ParamWidth, 128)
	depth := model.GetParamOr(scope, ParamDepth, 3)
	k := model.GetParamOr(scope, ParamNumClasses, 0)
	if k < 2 {
		panic(fmt.Errorf("models: a classifier needs num_classes ≥ 2, have %d", k))
	}
	act := activation(model.GetParamOr(scope, ParamActivation, "silu"))
	h := x
	for i := range depth {
		h = act(Dense(scope.In("layer_%d", i), h, width))
		hidden = append(hidden, h)
	}
	return Dense(scope.In("logits"), h, k), hidden
}

// classifierLoss is the per-sample cross-entropy −log softmax(logits)[label].
func classifierLoss(scope *model.Scope, x, label *graph.Node) *graph.Node {
	logits, _ := ClassifierNet(scope, x)
	k := logits.Shape().Dimensions[1]
	logp := graph.LogSoftmax(logits)
	onehot := graph.OneHot(label, k, logits.DType())
	return graph.Neg(graph.ReduceSum(graph.Mul(logp, onehot), -1))
}

// shiftImage writes into dst the square image src (side × side) translated
// by (dy, dx) pixels, filling uncovered pixels with fill (the background).
func shiftImage(dst, src []float64, side, dy, dx int, fill float64) {
	for r := range side {
		for c := range side {
			sr, sc := r-dy, c-dx
			if sr < 0 || sr >= side || sc < 0 || sc >= side {
				dst[r*side+c] = fill
			} else {
				dst[r*side+c] = src[sr*side+sc]
			}
		}
	}
}

// Classifier evaluates a trained classifier store on the host.
type Classifier struct {
	Backend compute.Backend
	Store   *model.Store
	K, D    int
	dtype   dtypes.DType
	exec    *model.Exec
}

// NewClassifier wraps a store holding ClassifierScope's variables for
// inputs of dimension d.
func NewClassifier(backend compute.Backend, store *model.Store, d int) (*Classifier, error) {
	if !HasNetwork(store, ClassifierScope) {
		return nil, errors.New("models: the store holds no classifier (scope " + ClassifierScope + ")")
	}
	dt, err := DTypeOf(store)
	if err != nil {
		return nil, err
	}
	k := model.GetRootParamOr(store, ParamNumClasses, 0)
	c := &Classifier{Backend: backend, Store: store, K: k, D: d, dtype: dt}
	c.exec, err = model.NewExec(backend, store, func(scope *model.Scope, x *graph.Node) []*graph.Node {
		logits, feat := ClassifierNet(scope, x)
		return []*graph.Node{graph.LogSoftmax(logits), feat}
	})
	if err != nil {
		return nil, fmt.Errorf("models: classifier: %w", err)
	}
	return c, nil
}

// LogProbs returns log p(k | x) [B, K] and the penultimate features [B, width]
// of images x [B, d], evaluated in chunks of at most 1024 rows.
func (c *Classifier) LogProbs(x *mat.Dense) (logp, features *mat.Dense, err error) {
	b, d := x.Dims()
	if d != c.D {
		return nil, nil, fmt.Errorf("models: classifier input has dimension %d, want %d", d, c.D)
	}
	const chunk = 1024
	var lp, ft []float64
	width := 0
	for lo := 0; lo < b; lo += chunk {
		hi := min(lo+chunk, b)
		rows := x.Slice(lo, hi, 0, d).(*mat.Dense)
		in := make([]float64, 0, (hi-lo)*d)
		for i := range hi - lo {
			in = append(in, rows.RawRowView(i)...)
		}
		for _, v := range in {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, errors.New("models: classifier input is not finite")
			}
		}
		out, err := c.exec.Exec(tensormat.FromFlat(c.dtype, in, hi-lo, d))
		if err != nil {
			return nil, nil, fmt.Errorf("models: classifier: %w", err)
		}
		lp = append(lp, tensormat.Copy(out[0])...)
		f := tensormat.Copy(out[1])
		width = out[1].Shape().Dimensions[1]
		ft = append(ft, f...)
		for _, t := range out {
			t.MustFinalizeAll()
		}
	}
	return mat.NewDense(b, c.K, lp), mat.NewDense(b, width, ft), nil
}

// Accuracy is the fraction of rows of x whose most probable class is labels[i].
func (c *Classifier) Accuracy(x *mat.Dense, labels []int) (float64, error) {
	logp, _, err := c.LogProbs(x)
	if err != nil {
		return 0, err
	}
	if len(labels) != logp.RawMatrix().Rows {
		return 0, fmt.Errorf("models: %d labels for %d images", len(labels), logp.RawMatrix().Rows)
	}
	right := 0
	for i, l := range labels {
		best := 0
		row := logp.RawRowView(i)
		for k, v := range row {
			if v > row[best] {
				best = k
			}
		}
		if best == l {
			right++
		}
	}
	return float64(right) / float64(len(labels)), nil
}
