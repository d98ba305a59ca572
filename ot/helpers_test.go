package ot

import (
	"testing"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

func mustSchedule(t *testing.T, name string) schedule.Source {
	t.Helper()
	s, err := schedule.ByName(name, schedule.Params{})
	if err != nil {
		t.Fatal(err)
	}
	return schedule.Continuous{Schedule: s}
}

func mustPoints(t *testing.T, rows [][]float64) mixture.Mixture {
	t.Helper()
	m, err := Points(rows)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGaussianMix(t *testing.T) mixture.Mixture {
	t.Helper()
	means := mat.NewDense(2, 2, []float64{0.5, 0.5, -0.3, 0.2})
	c1 := mat.NewSymDense(2, []float64{0.05, 0.02, 0.02, 0.03})
	c2 := mat.NewSymDense(2, []float64{0.02, -0.01, -0.01, 0.04})
	g, err := mixture.NewGaussian(means, []*mat.SymDense{c1, c2}, []float64{0.6, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var (
	nonAffinePts = [][]float64{{0, 0.5}, {0, 0}, {0.5, 0}}
	affinePts    = [][]float64{{0.2, -0.4}, {0.2, 0}, {0.2, 0.9}}
)
