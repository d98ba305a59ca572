package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/gomlx/ml/train"
	"github.com/gomlx/gomlx/ml/train/loss"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// The benchmarks of this file and BenchmarkScoreNet (bench_test.go) are the
// Go half of scripts/bench-torch.sh, which times the same networks in
// PyTorch with scripts/bench_torch.py (names of the cases match).

// mlpBench is a plain MLP written with GoMLX v0.28 directly: h ← tanh(h·W_i +
// b_i) for the hidden layers, the last layer linear; W_i [in, out] He-normal,
// b_i [1, out] zero (GoMLX's default initialiser), variables under
// scope "layer_<i>".
func mlpBench(scope *model.Scope, x *graph.Node, dims []int) *graph.Node {
	g := x.Graph()
	h := x
	for i := 1; i < len(dims); i++ {
		s := scope.In("layer_%d", i-1)
		w := s.VariableWithShape("weights", shapes.Make(x.DType(), dims[i-1], dims[i])).NodeValue(g)
		bias := s.VariableWithShape("biases", shapes.Make(x.DType(), 1, dims[i])).NodeValue(g)
		h = graph.Add(graph.MatMul(h, w), bias)
		if i+1 < len(dims) {
			h = graph.Tanh(h)
		}
	}
	return h
}

// BenchmarkMLP times a plain tanh MLP 784-512-512-512-784 in float32 on the
// backend NewTrainBackend gives (GoMLX's own VJPs and its train.Trainer with
// its graph Adam: the plain-GoMLX yardstick), forward and grad-x at batch 1,
// 64 and 256, the train step at 256:
//
//	forward:    out = MLP(x)
//	grad-x:     ∂ sum(out⊙out)/∂x (the weights are variables, not differentiated)
//	train-step: one train.Trainer step on loss.MeanSquaredError(target, MLP(x))
//	            with optimizer.Adam (lr 1e-3, β 0.9/0.999, ε 1e-7), the batch
//	            tensors built afresh from host slices each step (the trainer
//	            takes and frees them), the loss read back.
//
// x and target are N(0,1). scripts/bench_torch.py has the PyTorch twin.
func BenchmarkMLP(b *testing.B) {
	for _, c := range []struct {
		dims  []int
		batch int
	}{{[]int{784, 512, 512, 512, 784}, 256}} {
		din, dout := c.dims[0], c.dims[len(c.dims)-1]
		rng := rand.New(rand.NewPCG(2, 2))
		xData, yData := make([]float32, c.batch*din), make([]float32, c.batch*dout)
		for i := range xData {
			xData[i] = float32(rng.NormFloat64())
		}
		for i := range yData {
			yData[i] = float32(rng.NormFloat64())
		}
		dimNames := make([]string, len(c.dims))
		for i, d := range c.dims {
			dimNames[i] = fmt.Sprint(d)
		}
		arch := strings.Join(dimNames, "-")
		modelFn := func(scope *model.Scope, x *graph.Node) *graph.Node { return mlpBench(scope, x, c.dims) }
		setup := func() *train.Trainer {
			store := model.NewStore()
			if err := store.SetRNGStateFromSeed(1); err != nil {
				b.Fatal(err)
			}
			tr := train.NewTrainer(MustNewTrainBackend(), store, modelFn, loss.MeanSquaredError,
				optimizer.Adam().LearningRate(1e-3).Done(), nil, nil)
			trainStep(b, tr, xData, yData, c.batch) // creates and initialises the variables
			return tr
		}
		type run struct {
			mode  string
			batch int
		}
		runs := []run{{"forward", 1}, {"grad-x", 1}, {"forward", 64}, {"grad-x", 64},
			{"forward", c.batch}, {"grad-x", c.batch}, {"train-step", c.batch}}
		for _, r := range runs {
			mode := r.mode
			b.Run(fmt.Sprintf("%s/B=%d/%s", arch, r.batch, mode), func(b *testing.B) {
				tr := setup()
				var run func()
				if mode == "train-step" {
					run = func() { trainStep(b, tr, xData, yData, c.batch) }
				} else {
					x := tensors.FromFlatDataAndDimensions(xData[:r.batch*din], r.batch, din)
					defer x.MustFinalizeAll()
					e := model.MustNewExec(tr.Backend(), tr.Store(), func(scope *model.Scope, x *graph.Node) *graph.Node {
						out := modelFn(scope, x)
						if mode == "forward" {
							return out
						}
						return graph.Gradient(graph.ReduceAllSum(graph.Square(out)), x)[0]
					})
					run = func() { e.MustCall(x)[0].MustFinalizeAll() }
				}
				run() // compile outside the loop
				for b.Loop() {
					run()
				}
			})
		}
	}
}

// trainStep runs one step of tr on fresh tensors of x and y and reads the loss.
func trainStep(b *testing.B, tr *train.Trainer, x, y []float32, batch int) {
	metrics, err := tr.TrainStep(train.Batch{
		Inputs: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x, batch, len(x)/batch)},
		Labels: []*tensors.Tensor{tensors.FromFlatDataAndDimensions(y, batch, len(y)/batch)},
	})
	if err != nil {
		b.Fatal(err)
	}
	if l := scalarOf(metrics[0]); math.IsNaN(l) {
		b.Fatal("MLP benchmark: loss is NaN")
	}
	for _, m := range metrics {
		m.MustFinalizeAll()
	}
}
