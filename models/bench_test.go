package models

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// scoreNetCase is one network of BenchmarkScoreNet: the residual MLP of
// ResidualMLP with the ε head (Eps, in parameterisation param) or the DF-TM
// head (TraceNet), unconditional or with classes classes, trained at
// batch trainBatch.
type scoreNetCase struct {
	d, width, depth, classes int
	param, head              string
	trainBatch               int
}

// scoreNetCases are the toy-scale configurations and the MNIST networks the
// experiments use (mnist.Specs: the class-conditional ε-network with EDM
// preconditioning and the DF-TM network t_θ, both width 512 × 3).
var scoreNetCases = []scoreNetCase{
	{d: 2, width: 128, depth: 3, param: "eps", head: "eps", trainBatch: 1024},
	{d: 64, width: 256, depth: 3, param: "eps", head: "eps", trainBatch: 256},
	{d: 784, width: 256, depth: 3, param: "eps", head: "eps", trainBatch: 128},
	{d: 784, width: 1024, depth: 4, param: "eps", head: "eps", trainBatch: 128},
	{d: 784, width: 512, depth: 3, classes: 10, param: "edm", head: "eps", trainBatch: 128},
	{d: 784, width: 512, depth: 3, classes: 10, param: "edm", head: "dftm", trainBatch: 128},
}

// String names the network in one level of the benchmark name (no slash),
// so that -bench patterns can select batch and mode by level, e.g.
// 'BenchmarkScoreNet/./^B=128$/^train-step$'.
func (c scoreNetCase) String() string {
	s := fmt.Sprintf("d=%d,w=%dx%d", c.d, c.width, c.depth)
	if c.classes > 0 {
		s += fmt.Sprintf(",K=%d", c.classes)
	}
	if c.param != "eps" {
		s += "," + c.param
	}
	if c.head != "eps" {
		s += "," + c.head
	}
	return s
}

// BenchmarkScoreNet times, on the backend NewTrainBackend gives, each
// network of scoreNetCases: at batch 1, 64 and its training batch, one
// forward pass, the gradient of Σ out² w.r.t. the input x (grad-x), and
// w.r.t. x and every trainable weight (grad-all, the backward pass of a
// training step without loss, clipping, Adam and EMA); at the training
// batch, one full training step (models.Trainer.TrainSteps(1): host
// sampling, loss, gradients, clipping, Adam, EMA). Inputs are rows of one
// training batch (x₀, α, σ, class). scripts/bench_torch.py has the PyTorch
// twins (scripts/bench-torch.sh, make bench-torch). Goals of the substrate
// issue: grad-x ≤ 2× forward, train-step ≤ 3× forward.
func BenchmarkScoreNet(b *testing.B) {
	for _, c := range scoreNetCases {
		setup := func() *Trainer {
			data := make([][]float64, 512)
			labels := make([]int, len(data))
			rng := rand.New(rand.NewPCG(1, 1))
			for i := range data {
				data[i] = make([]float64, c.d)
				for j := range data[i] {
					data[i][j] = rng.NormFloat64()
				}
				labels[i] = i % max(c.classes, 1)
			}
			store := NewStore()
			store.SetParams(map[string]any{ParamWidth: c.width, ParamDepth: c.depth, ParamBatchSize: c.trainBatch,
				ParamNumClasses: c.classes, ParamParam: c.param})
			obj := DSM
			if c.head == "dftm" {
				obj = DFTM
			}
			if c.classes == 0 {
				labels = nil
			}
			tr, err := NewTrainer(MustNewTrainBackend(), store, schedule.DefaultVP(), obj, data, labels)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tr.TrainSteps(1); err != nil { // creates and initialises the variables
				b.Fatal(err)
			}
			return tr
		}
		for _, batch := range []int{1, 64, c.trainBatch} {
			for _, mode := range []string{"forward", "grad-x", "grad-all"} {
				b.Run(fmt.Sprintf("%s/B=%d/%s", c, batch, mode), func(b *testing.B) {
					tr := setup()
					run := scoreNetCall(b, tr, c, batch, mode)
					run() // compile outside the loop
					for b.Loop() {
						run()
					}
				})
			}
		}
		b.Run(fmt.Sprintf("%s/B=%d/train-step", c, c.trainBatch), func(b *testing.B) {
			tr := setup()
			for b.Loop() {
				if _, err := tr.TrainSteps(1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// scoreNetCall returns one call of mode on the first batch rows of a
// training batch of tr.
func scoreNetCall(b *testing.B, tr *Trainer, c scoreNetCase, batch int, mode string) func() {
	full := tr.batch() // x₀, ε, α, σ, weight, class, lr
	rows := func(t *tensors.Tensor) *tensors.Tensor {
		dims := t.Shape().Dimensions
		var out *tensors.Tensor
		t.MustConstFlatData(func(flat any) {
			per := 1
			for _, d := range dims[1:] {
				per *= d
			}
			nd := append([]int{batch}, dims[1:]...)
			switch f := flat.(type) {
			case []float32:
				out = tensors.FromFlatDataAndDimensions(append([]float32(nil), f[:batch*per]...), nd...)
			case []float64:
				out = tensors.FromFlatDataAndDimensions(append([]float64(nil), f[:batch*per]...), nd...)
			case []int32:
				out = tensors.FromFlatDataAndDimensions(append([]int32(nil), f[:batch*per]...), nd...)
			}
		})
		return out
	}
	args := []any{rows(full[0]), rows(full[2]), rows(full[3]), rows(full[5])}
	e := model.MustNewExec(tr.Backend, tr.Store, func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		inputs := Inputs{X: in[0], Alpha: in[1], Sigma: in[2]}
		if c.classes > 0 {
			inputs.Class = in[3]
		}
		var out *graph.Node
		if c.head == "dftm" {
			out = TraceNet(scope, inputs)
		} else {
			out = Eps(scope, inputs)
		}
		if mode == "forward" {
			return []*graph.Node{out}
		}
		wrt := []*graph.Node{in[0]}
		if mode == "grad-all" {
			g := in[0].Graph()
			for v := range scope.IterVariables() {
				if v.Trainable && v.InUseByGraph(g) {
					wrt = append(wrt, v.NodeValue(g))
				}
			}
		}
		return graph.Gradient(graph.ReduceAllSum(graph.Square(out)), wrt...)
	})
	return func() {
		for _, t := range e.MustCall(args...) {
			t.MustFinalizeAll()
		}
	}
}

// scoreNetCaseNames are BenchmarkScoreNet's sub-benchmark names.
func scoreNetCaseNames() []string {
	var names []string
	for _, c := range scoreNetCases {
		for _, batch := range []int{1, 64, c.trainBatch} {
			for _, mode := range []string{"forward", "grad-x", "grad-all"} {
				names = append(names, fmt.Sprintf("BenchmarkScoreNet/%s/B=%d/%s", c, batch, mode))
			}
		}
		names = append(names, fmt.Sprintf("BenchmarkScoreNet/%s/B=%d/train-step", c, c.trainBatch))
	}
	return names
}

// TestScoreNetCaseNamesAreUnique also lists the cases for scripts/profile.sh
// (go test -run TestScoreNetCaseNames -v prints them).
func TestScoreNetCaseNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range scoreNetCaseNames() {
		if seen[n] {
			t.Errorf("duplicate case %s", n)
		}
		seen[n] = true
		t.Log("case", n)
	}
}
