package models

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestInferenceGraphsMatchTrainingGraphs: a network evaluated in an
// inference graph (the backend's fused LayerNorm and dense + SiLU,
// fusedForInference) computes what the same network computes in a
// training graph (the decompositions alone), and so does its gradient in
// x: the patch network and FiLMMLP, in float64 to 1e-12 and in float32 to
// 1e-5. The inference graph must hold fused ops, so that this compares two
// paths.
func TestInferenceGraphsMatchTrainingGraphs(t *testing.T) {
	const side, bsz = 8, 3
	backend := MustNewBackend()
	for _, dt := range []string{"float64", "float32"} {
		for _, arch := range []string{ArchPatch, ArchFiLM} {
			store := NewStore()
			store.SetParams(map[string]any{ParamDType: dt, ParamArch: arch, ParamWidth: 8, ParamDepth: 2, ParamPatch: 2,
				ParamPatchHalo: 1, ParamEmbedDim: 4})
			rng := rand.New(rand.NewPCG(5, 6))
			x := make([][]float64, bsz)
			for i := range x {
				x[i] = make([]float64, side*side)
				for j := range x[i] {
					x[i][j] = rng.NormFloat64()
				}
			}
			al, sg := []float64{0.9, 0.5, 0.1}, []float64{0.44, 0.87, 0.99}
			var want []float64
			for _, training := range []bool{true, false} {
				fused := 0
				outs := model.MustExecOnceN(backend, store, func(sc *model.Scope, xn, an, sn *graph.Node) []*graph.Node {
					sc.Store().SetTraining(xn.Graph(), training)
					if dt == "float32" {
						xn, an, sn = graph.ConvertDType(xn, dtypes.Float32), graph.ConvertDType(an, dtypes.Float32), graph.ConvertDType(sn, dtypes.Float32)
					}
					eps := trunk(sc.At(ScoreScope), Inputs{X: xn, Alpha: an, Sigma: sn}, side*side, nil, false) // not zero-initialised: an output that depends on x
					grad := graph.Gradient(graph.ReduceAllSum(graph.Mul(eps, eps)), xn)[0]
					for _, n := range xn.Graph().Nodes() {
						if n.Type() == graph.NodeTypeFusedLayerNorm || n.Type() == graph.NodeTypeFusedDense {
							fused++
						}
					}
					return []*graph.Node{graph.ConvertDType(eps, dtypes.Float64), graph.ConvertDType(grad, dtypes.Float64)}
				}, x, al, sg)
				got := append(tensors.MustCopyFlatData[float64](outs[0]), tensors.MustCopyFlatData[float64](outs[1])...)
				if training {
					if fused != 0 {
						t.Fatalf("%s %s: a training graph holds %d fused ops", dt, arch, fused)
					}
					want = got
					continue
				}
				if fused == 0 {
					t.Fatalf("%s %s: the inference graph holds no fused op", dt, arch)
				}
				tol := map[string]float64{"float64": 1e-12, "float32": 1e-5}[dt]
				if e := relErr(got, want); e > tol {
					t.Errorf("%s %s: inference graph off the training graph by %.3g (relative), want ≤ %g", dt, arch, e, tol)
				}
			}
		}
	}
}
