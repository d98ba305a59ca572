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

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// The benchmarks of this file and BenchmarkScoreNet (bench_test.go) are the
// Go half of scripts/bench-torch.sh, which times the same networks in
// PyTorch with scripts/bench_torch.py (names of the cases match).

// BenchmarkScoreNetGradAll fills the one number BenchmarkScoreNet does not
// give for the PyTorch comparison: the gradient of ⟨ε̂, ε̂⟩ =
// ReduceAllSum(Square(Eps)) w.r.t. the input x AND every trainable weight
// (GoMLX's own VJPs), on the same configs, backend, store and inputs (x₀, α,
// σ of one training batch) as BenchmarkScoreNet's grad-x mode. It is the
// backward pass of a training step without the loss, clipping, Adam and EMA
// around it. It also reports the number of trainable weights ("params"), to
// check the size of the PyTorch twin.
func BenchmarkScoreNetGradAll(b *testing.B) {
	for _, c := range []struct{ d, width, depth, batch int }{{2, 128, 3, 1024}, {64, 256, 3, 256}, {784, 256, 3, 128}, {784, 1024, 4, 128}} {
		b.Run(fmt.Sprintf("d=%d/w=%dx%d/B=%d/grad-all", c.d, c.width, c.depth, c.batch), func(b *testing.B) {
			data := make([][]float64, 512)
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range data {
				data[i] = make([]float64, c.d)
				for j := range data[i] {
					data[i][j] = rng.NormFloat64()
				}
			}
			store := NewStore()
			store.SetParams(map[string]any{ParamWidth: c.width, ParamDepth: c.depth, ParamBatchSize: c.batch})
			tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), DSM, data, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tr.TrainSteps(1); err != nil { // creates and initialises the variables
				b.Fatal(err)
			}
			batch := tr.batch()
			args := []any{batch[0], batch[2], batch[3]}
			nParams := 0
			e := model.MustNewExec(tr.Backend, tr.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
				eps := Eps(scope, Inputs{X: in[0], Alpha: in[1], Sigma: in[2]})
				g := in[0].Graph()
				wrt := []*graph.Node{in[0]}
				for v := range scope.IterVariables() {
					if v.Trainable && v.InUseByGraph(g) {
						wrt = append(wrt, v.NodeValue(g))
						nParams += v.Shape().Size()
					}
				}
				return graph.Gradient(graph.ReduceAllSum(graph.Square(eps)), wrt...)
			})
			run := func() {
				for _, t := range e.MustCall(args...) {
					t.MustFinalizeAll()
				}
			}
			run() // compile outside the loop
			for b.Loop() {
				run()
			}
			b.ReportMetric(float64(nParams), "params")
		})
	}
}

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

// BenchmarkMLP times a plain tanh MLP 784-512-512-512-784 at batch 256 in
// float32 on the backend NewTrainBackend gives (GoMLX's own VJPs):
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
		name := fmt.Sprintf("%s/B=%d", strings.Join(dimNames, "-"), c.batch)
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
		for _, mode := range []string{"forward", "grad-x", "train-step"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				tr := setup()
				var run func()
				if mode == "train-step" {
					run = func() { trainStep(b, tr, xData, yData, c.batch) }
				} else {
					x := tensors.FromFlatDataAndDimensions(xData, c.batch, din)
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
