package access

import (
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
)

// TestSharedTimeSeesOneTimeOnly: SharedTime finds the one value behind the
// per-row times the host wrappers build (rowTimes), and nothing behind
// times given per row or spread from several values.
func TestSharedTimeSeesOneTimeOnly(t *testing.T) {
	g := graph.NewGraph(testBackend(), "shared-time")
	x := graph.Parameter(g, "x", shapes.Make(dtypes.Float64, 5, 3))
	one := graph.Parameter(g, "alpha", shapes.Make(dtypes.Float64, 1))
	perRow := graph.Parameter(g, "alphas", shapes.Make(dtypes.Float64, 5))
	two := graph.Parameter(g, "pair", shapes.Make(dtypes.Float64, 2, 1))
	if s := SharedTime(rowTimes(one, x)); s == nil || s.Shape().Rank() != 0 {
		t.Errorf("one time broadcast to the rows: SharedTime = %v, want its scalar", s)
	}
	if s := SharedTime(perRow); s != nil {
		t.Error("times given per row taken for one time")
	}
	if s := SharedTime(graph.BroadcastToDims(two, 2, 5)); s != nil {
		t.Error("two times spread over rows taken for one time")
	}
	if s := SharedTime(graph.Add(rowTimes(one, x), perRow)); s != nil {
		t.Error("a sum with per-row times taken for one time")
	}
}
