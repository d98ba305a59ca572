package schedule_test

import (
	"fmt"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// The coefficients of one time, what every model and solver is keyed by:
// α, σ, the drift f = α'/α and the diffusion g² = 2σσ' − 2fσ², here for the
// VP schedule at t = 0.5; and a grid of 4 steps uniform in log σ, from
// noise (t = 1) to data (t = 10⁻³).
func ExampleAt() {
	s := schedule.DefaultVP()
	c, err := schedule.At(s, 0.5)
	if err != nil {
		panic(err)
	}
	fmt.Printf("α = %.4f, σ = %.4f, f = %.4f, g² = %.4f\n", c.Alpha, c.Sigma, c.F, c.G2)
	grid, err := schedule.TimeGrid(s, schedule.GridLogSigma, 1e-3, 1, 4)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", grid)
	// Output:
	// α = 0.2812, σ = 0.9597, f = -5.0250, g² = 10.0500
	// [1.0000 0.0993 0.0279 0.0065 0.0010]
}
