package fastgrad

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// mlpBench is a float32 dense network x → tanh(x·W₀+b₀) → … → ·W_L built on graph.Dot,
// the form dfx's networks use.
type mlpBench struct {
	name  string
	batch int
	dims  []int // input, hidden…, output
}

var mlpBenches = []mlpBench{
	{"3-128-128-1/B1024", 1024, []int{3, 128, 128, 1}},
	{"64-256-256-256-64/B256", 256, []int{64, 256, 256, 256, 64}},
}

func (m mlpBench) inputs() []any {
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := func(dims ...int) *tensors.Tensor {
		n := dims[0] * dims[len(dims)-1]
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() / 8)
		}
		return tensors.FromFlatDataAndDimensions(v, dims...)
	}
	args := []any{rnd(m.batch, m.dims[0])}
	for i := 0; i+1 < len(m.dims); i++ {
		args = append(args, rnd(m.dims[i], m.dims[i+1]), rnd(1, m.dims[i+1]))
	}
	return args
}

func (m mlpBench) forward(nodes []*graph.Node) *graph.Node {
	h := nodes[0]
	for i := 1; i+1 < len(nodes); i += 2 {
		h = graph.Add(graph.Dot(h, nodes[i]), nodes[i+1])
		if i+2 < len(nodes) {
			h = graph.Tanh(h)
		}
	}
	return h
}

// mode: "forward", "grad-x" (∂⟨out,1⟩/∂x, the VJP the Fisher estimators use) or
// "grad-all" (∂/∂x and every weight, the training step's backward pass).
func (m mlpBench) exec(b backends.Backend, mode string) *graph.Exec {
	return graph.MustNewExec(b, func(nodes []*graph.Node) []*graph.Node {
		out := m.forward(nodes)
		loss := graph.ReduceAllSum(graph.Mul(out, out))
		switch mode {
		case "grad-x":
			return graph.Gradient(loss, nodes[0])
		case "grad-all":
			return graph.Gradient(loss, nodes...)
		}
		return []*graph.Node{out}
	})
}

// BenchmarkMLP times forward, gradient w.r.t. the input, and gradient w.r.t.
// everything, with the fast VJPs and with GoMLX's originals. The claims:
// grad-x/fast ≤ 3× forward, grad-all/fast ≤ 4× forward.
//
// The backend is dfx's default (models.DefaultBackendConfig; not imported to
// avoid an import cycle).
func BenchmarkMLP(b *testing.B) {
	be, err := backends.NewWithConfig("go:ops_sequential,dotgeneral_large")
	if err != nil {
		b.Fatal(err)
	}
	defer Install()
	for _, m := range mlpBenches {
		args := m.inputs()
		for _, vjp := range []string{"fast", "original"} {
			for _, mode := range []string{"forward", "grad-x", "grad-all"} {
				if vjp == "original" && mode == "forward" {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/%s", m.name, mode, vjp), func(b *testing.B) {
					if vjp == "fast" {
						Install()
					} else {
						Uninstall()
					}
					e := m.exec(be, mode)
					e.MustExec(args...) // compile outside the timer
					b.ResetTimer()
					for b.Loop() {
						for _, t := range e.MustExec(args...) {
							t.MustFinalizeAll()
						}
					}
				})
			}
		}
	}
}
