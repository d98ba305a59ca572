package models

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
)

// GoMLX v0.28.8's reverse-mode rules end several VJPs — every DotGeneral's,
// for the gradient of each operand — with TransposeAllAxes back to the
// operand's axis order, and emit the Transpose node even when that
// permutation is the identity. The Go backend (compute v0.1.6) executes such
// a node as a full element-by-element copy through its transpose iterator:
// in a train step of the 1024 × 4 residual MLP these copies of every weight
// gradient and every activation gradient took ≈ 20 % of the step
// (figures/bench/PROFILE.md). The rules are registered in
// graph.VJPRegistration, GoMLX's public table of gradients; init wraps each
// rule so that an identity Transpose it returns is replaced by its input.
// The result is the same value; the unused Transpose is then dropped by the
// backend's dead-code elimination. Nothing else of a rule changes.
func init() {
	for typ, vjp := range graph.VJPRegistration {
		graph.VJPRegistration[typ] = elideIdentityTransposes(vjp)
	}
}

func elideIdentityTransposes(vjp graph.VJP) graph.VJP {
	return func(node *graph.Node, vjpOutputs []*graph.Node, outputShape shapes.Shape) []*graph.Node {
		grads := vjp(node, vjpOutputs, outputShape)
		for i, g := range grads {
			if isIdentityTranspose(g) {
				grads[i] = g.Inputs()[0]
			}
		}
		return grads
	}
}

// isIdentityTranspose reports whether n is a Transpose whose permutation is
// the identity. GoMLX exposes a node's parameters only through its String
// ("Transpose(x=[#12], permutation=[0 1])"), so the permutation is read from
// there; a format that does not match is simply not elided.
func isIdentityTranspose(n *graph.Node) bool {
	if n == nil || n.Type() != graph.NodeTypeTranspose || len(n.Inputs()) != 1 {
		return false
	}
	if !n.Inputs()[0].Shape().Equal(n.Shape()) {
		return false
	}
	perm := make([]int, n.Rank())
	for i := range perm {
		perm[i] = i
	}
	return strings.Contains(n.String(), fmt.Sprintf("permutation=%v)", perm))
}
