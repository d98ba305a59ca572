package schedule

import (
	"fmt"
	"math"
	"sort"
)

// Source gives the Coefficients at a time: a continuous schedule at any
// time of its interval (Continuous), a discrete protocol only at its nodes
// (Table). Solvers take a Source, so that a discrete table and a continuous
// schedule drive the same integrator.
type Source interface {
	Name() string
	// Interval is the valid time range [TMin, TMax].
	Interval() (tMin, tMax float64)
	// At returns every coefficient at t, or an error wrapping ErrTime.
	At(t float64) (Coefficients, error)
}

// Continuous is the Source of a continuous Schedule: At is schedule.At.
type Continuous struct{ Schedule }

// At implements Source.
func (c Continuous) At(t float64) (Coefficients, error) { return At(c.Schedule, t) }

// Table is a schedule known only at its nodes, e.g. a DDPM protocol's
// discrete coefficients: At answers at a node's time (within 1e-9) and is an
// error elsewhere, so a solver whose stages fall between nodes (RK4's
// midpoints) fails loudly instead of interpolating.
type Table struct {
	Label string
	Nodes []Coefficients // strictly increasing T
}

// NewTable checks that the nodes' times increase strictly.
func NewTable(label string, nodes []Coefficients) (*Table, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("schedule %s: a table needs at least one node", label)
	}
	for i := 1; i < len(nodes); i++ {
		if !(nodes[i].T > nodes[i-1].T) {
			return nil, fmt.Errorf("schedule %s: node times must increase, got %g after %g", label, nodes[i].T, nodes[i-1].T)
		}
	}
	return &Table{Label: label, Nodes: nodes}, nil
}

func (tb *Table) Name() string { return tb.Label }

// Interval is [first node, last node].
func (tb *Table) Interval() (float64, float64) { return tb.Nodes[0].T, tb.Nodes[len(tb.Nodes)-1].T }

// At returns the node at t.
func (tb *Table) At(t float64) (Coefficients, error) {
	const tol = 1e-9
	i := sort.Search(len(tb.Nodes), func(i int) bool { return tb.Nodes[i].T >= t-tol })
	if i < len(tb.Nodes) && math.Abs(tb.Nodes[i].T-t) <= tol {
		return tb.Nodes[i], nil
	}
	lo, hi := tb.Interval()
	return Coefficients{}, fmt.Errorf("schedule %s is defined only at its %d nodes in [%g, %g]; got t = %g: %w",
		tb.Label, len(tb.Nodes), lo, hi, t, ErrTime)
}

// Check returns an error unless α and σ are positive and finite (the
// Fisher, the score and the denoiser are undefined where σ = 0).
func (c Coefficients) Check() error {
	if !(c.Sigma > 0) || math.IsInf(c.Sigma, 0) {
		return fmt.Errorf("schedule: σ(%g) = %g, must be positive and finite: %w", c.T, c.Sigma, ErrTime)
	}
	if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
		return fmt.Errorf("schedule: α(%g) = %g, must be positive and finite: %w", c.T, c.Alpha, ErrTime)
	}
	return nil
}
