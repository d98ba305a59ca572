package ot_test

import (
	"context"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/ot"
)

// The OT test of a data set (paper Algorithm ot): integrate the PF-ODE
// map's Jacobian from noise to data for a few chains and ask whether it is
// symmetric and positive definite. Three points on a line (affine data)
// give an OT map; three points off a line do not. DDIM steps stay stable
// near t = 0, where explicit steps on a uniform grid do not.
func ExampleTest() {
	for _, data := range []struct {
		name string
		rows [][]float64
	}{
		{"affine", [][]float64{{0, 0}, {0, 0.5}, {0, -0.6}}},
		{"non-affine", [][]float64{{0.5, 0}, {0, -0.5}, {0, 0}}},
	} {
		mix, err := ot.Points(data.rows)
		if err != nil {
			panic(err)
		}
		src := schedule.Continuous{Schedule: schedule.DefaultVP()}
		grid, err := ot.Grid(src, "uniform", 0, 200)
		if err != nil {
			panic(err)
		}
		out, err := ot.Test(context.Background(), ot.Spec{Data: mix, Schedule: src, Grid: grid, Solver: ot.DDIM, Chains: 16, Seed: 1})
		if err != nil {
			panic(err)
		}
		s := out.Summary[0]
		fmt.Printf("%s: OT map %v (worst asymmetry %.1f%%, %.0f%% of %d chains fail)\n", data.name, s.OT, 100*s.Asym.Worst, 100*s.FailFrac, s.Chains)
	}
	// Output:
	// affine: OT map true (worst asymmetry 0.0%, 0% of 16 chains fail)
	// non-affine: OT map false (worst asymmetry 15.0%, 100% of 16 chains fail)
}
