package access

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"
)

// TestHutchinsonSharesTheForwardPassExactly: Hutchinson's estimate, which
// takes a point's probes several at a time through one forward pass and
// one VJP each (VJPQuadsGraph, probeGroup), equals in float64 the mean of
// the same probes' quadratic forms by a forward pass and a VJP each
// (VJPQuadGraph on the point's row repeated): for K whose probes go in one
// group (4), in groups of a divisor (16 → 2 × 8) and one at a time (11),
// in one call and in calls of a few rows (every share allowed:
// sharedRows = 1). With the default sharedRows, a forward pass is shared
// only where each VJP keeps enough rows.
func TestHutchinsonSharesTheForwardPassExactly(t *testing.T) {
	for _, c := range []struct{ k, rows, want int }{
		{16, 16, 1}, {4, 4, 1}, {4, 200, 4}, {4, 64, 2}, {16, 1024, 8}, {784, 28, 1}, {784, 784, 8}, {11, 4096, 1},
	} {
		if g := probeGroup(c.k, c.rows); g != c.want {
			t.Errorf("%d vectors a point, %d rows a call: groups of %d, want %d", c.k, c.rows, g, c.want)
		}
	}
	defer func(n int) { sharedRows = n }(sharedRows)
	sharedRows = 1
	f := newFixture(t, 5, 4, 3, 0.3)
	c := mustAt(f.s, f.t)
	net := f.mix.Net()
	oneVJP, err := net.exec(func(scope *model.Scope, in []*graph.Node) *graph.Node {
		return VJPQuadGraph(net.Network, scope, in[0], in[1], rowTimes(in[2], in[0]), rowTimes(in[3], in[0]))
	})
	if err != nil {
		t.Fatal(err)
	}
	b, d := f.xm.Dims()
	for _, k := range []int{1, 4, 11, 16} {
		for _, rows := range []int{0, 5} {
			h, err := NewHutchinson(f.mix.Net(), k, Rademacher, 3)
			if err != nil {
				t.Fatal(err)
			}
			if rows > 0 {
				h.SetMaxRows(rows)
			}
			got, err := h.Trace(c, f.xm)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(3, 0x5eed)) // Hutchinson's stream
			xs, vs := mat.NewDense(b*k, d, nil), mat.NewDense(b*k, d, nil)
			for i := range b * k {
				xs.SetRow(i, f.xm.RawRowView(i/k))
				Rademacher.sample(rng, vs.RawRowView(i))
			}
			quads, err := h.r.runGroups(context.Background(), oneVJP, xs, vs, 1, c.Alpha, c.Sigma)
			if err != nil {
				t.Fatal(err)
			}
			want := sumGroups(quads, b, k, 1/float64(k))
			for q := range want {
				if e := relErr(got[q], want[q]); e > 1e-12 {
					t.Errorf("K = %d, %d rows a call, point %d: %.15g, one VJP a probe %.15g (relative %.2g)", k, rows, q, got[q], want[q], e)
				}
			}
		}
	}
}
