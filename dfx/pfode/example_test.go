package pfode_test

import (
	"context"
	"fmt"
	"math"

	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"gonum.org/v1/gonum/mat"
)

// The log-density of a point under data N(0, I) on the VP schedule, by the
// PF-ODE from t = 1e-3 up to T with adaptive Dormand–Prince: the score is
// −x/v_t and the Fisher trace d/v_t, v_t = α² + σ² = 1.
func ExampleSolveAdaptive() {
	src := schedule.Continuous{Schedule: schedule.DefaultVP()}
	model := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
		b, d := x.Dims()
		v := c.Alpha*c.Alpha + c.Sigma*c.Sigma
		ev := &score.Eval{Score: mat.NewDense(b, d, nil), Trace: make([]float64, b)}
		ev.Score.Scale(-1/v, x)
		for i := range ev.Trace {
			ev.Trace[i] = float64(d) / v
		}
		return ev, nil
	})
	x := mat.NewDense(1, 2, []float64{0.5, -1})
	sys := pfode.New(src, model, 1, 2, pfode.LogDensity)
	y := sys.Init(x, nil)
	st, err := pfode.SolveAdaptive(context.Background(), sys, 1e-3, 1, y, pfode.Adaptive{RTol: 1e-8})
	if err != nil {
		panic(err)
	}
	// q_T = N(0, v_T I) exactly (v = 1); schedule.Prior's N(0, σ_T² I) would
	// add its own small error.
	prior := schedule.PriorLogProb(schedule.Coefficients{Sigma: 1}, sys.X(y))
	logq := prior[0] - sys.LogDensity(y)[0] // log q_ε = log q_T − Δ
	exact := -math.Log(2*math.Pi) - 0.5*(0.25+1)
	fmt.Printf("log q = %.6f (exact %.6f); %d steps, %d rejected, NFE %d\n", logq, exact, st.Steps, st.Rejected, st.NFE)
	// Output:
	// log q = -2.462877 (exact -2.462877); 5 steps, 0 rejected, NFE 32
}
