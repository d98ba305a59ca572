package models

import (
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestPatchNetIsLocal: on a 12×12 image cut into 3×3 patches with halo 1,
// an output pixel depends on the input pixels of its own patch and of the
// 8 around it, and on no other: perturbing one input pixel changes exactly
// the outputs of the patches whose window holds it. This fails if the
// windows are cut or the outputs put back in the wrong place.
func TestPatchNetIsLocal(t *testing.T) {
	const side, p = 12, 3
	store := NewStore()
	store.SetParams(map[string]any{ParamWidth: 8, ParamDepth: 1, ParamPatch: p, ParamPatchHalo: 1, ParamEmbedDim: 4})
	backend := MustNewBackend()
	run := func(x []float32) []float32 {
		out := model.MustExecOnce(backend, store, func(sc *model.Scope, xn, an, sn *graph.Node) *graph.Node {
			return PatchNet(sc.In("net"), Inputs{X: xn, Alpha: an, Sigma: sn}, side*side, nil, false)
		}, [][]float32{x}, []float32{0.8}, []float32{0.6})
		return tensors.MustCopyFlatData[float32](out)
	}
	x := make([]float32, side*side)
	for i := range x {
		x[i] = float32((i*37)%11)/11 - 0.5
	}
	base := run(x)
	for _, pix := range [][2]int{{0, 0}, {4, 7}, {11, 5}, {6, 6}} {
		y := append([]float32(nil), x...)
		y[pix[0]*side+pix[1]] += 1
		got := run(y)
		for r := range side {
			for c := range side {
				dr, dc := r/p-pix[0]/p, c/p-pix[1]/p
				near := dr >= -1 && dr <= 1 && dc >= -1 && dc <= 1
				changed := got[r*side+c] != base[r*side+c]
				if changed != near {
					t.Fatalf("input (%d,%d) perturbed: output (%d,%d) changed = %v, want %v", pix[0], pix[1], r, c, changed, near)
				}
			}
		}
	}
}
