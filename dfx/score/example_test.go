package score_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// A mixture as a model: asked for its noise prediction and Fisher trace at
// the VP schedule's t = 0.5, for one point; the denoiser follows by Tweedie.
func ExampleExact() {
	m, _ := mixture.NewDirac(mat.NewDense(2, 2, []float64{1, 0, -1, 0}), nil)
	c, _ := schedule.At(schedule.DefaultVP(), 0.5)
	x := mat.NewDense(1, 2, []float64{0.3, 0.2})
	ev, err := score.Exact{Mixture: m}.Eval(c, x, score.WantEps|score.WantTrace)
	if err != nil {
		panic(err)
	}
	if err := ev.Fill(c, x, score.WantDenoiser); err != nil {
		panic(err)
	}
	fmt.Printf("ε̂ = %.4f, ȳ = %.4f, tr F = %.4f\n", ev.Eps.RawRowView(0), ev.Denoiser.RawRowView(0), ev.Trace[0])
	// Output:
	// ε̂ = [0.2858 0.2084], ȳ = [0.0913 0.0000], tr F = 2.0793
}
