package adjoint

import (
	"context"
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// TestBadInputIsAnErrorNotAPanic feeds Predict, Gradient, Backprop and
// Sample bad shapes, times, windows and non-finite values; each must return
// an error (and not panic).
func TestBadInputIsAnErrorNotAPanic(t *testing.T) {
	g := twoBlobs(t)
	x := mat.NewDense(3, 4, []float64{0.1, 0.2, 0.3, 0.4, -1, 0, 1, 0, 0.5, 0.5, -0.5, 0})
	nan := mat.DenseCopyOf(x)
	nan.Set(1, 2, math.NaN())
	lo, _ := g.Schedule.Interval()
	wrongGrad := func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		b, _ := x0.Dims()
		return make([]float64, b), mat.NewDense(b, 3, nil), nil
	}
	nanLoss := func(x0 *mat.Dense) ([]float64, *mat.Dense, error) {
		b, d := x0.Dims()
		l := make([]float64, b)
		l[0] = math.Inf(1)
		return l, mat.NewDense(b, d, nil), nil
	}
	wrongModel := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, _ score.Want) (*score.Eval, error) {
		return &score.Eval{Eps: mat.NewDense(1, 1, nil)}, nil
	})
	nanModel := score.ModelFunc(func(c schedule.Coefficients, x *mat.Dense, _ score.Want) (*score.Eval, error) {
		b, d := x.Dims()
		e := mat.NewDense(b, d, nil)
		e.Set(0, 0, math.NaN())
		return &score.Eval{Eps: e}, nil
	})
	with := func(f func(*Guide)) Guide { h := g; f(&h); return h }
	tr, err := g.Predict(x, 0.5, 2)
	if err != nil {
		t.Fatal(err)
	}
	ok := Config{Steps: 10, From: 2, To: 6, InnerSteps: 3, Strength: 0.1}
	cases := map[string]func() error{
		"dimension mismatch": func() error { _, err := g.Gradient(mat.NewDense(2, 3, nil), 0.5, 2); return err },
		"non-finite state":   func() error { _, err := g.Gradient(nan, 0.5, 2); return err },
		"inner steps 0":      func() error { _, err := g.Gradient(x, 0.5, 0); return err },
		"t at t_min":         func() error { _, err := g.Gradient(x, lo, 2); return err },
		"t beyond T":         func() error { _, err := g.Gradient(x, 1.5, 2); return err },
		"t NaN":              func() error { _, err := g.Gradient(x, math.NaN(), 2); return err },
		"no operator":        func() error { _, err := with(func(h *Guide) { h.Operator = nil }).Gradient(x, 0.5, 2); return err },
		"no model":           func() error { _, err := with(func(h *Guide) { h.Model = nil }).Predict(x, 0.5, 2); return err },
		"loss gradient shape": func() error {
			_, err := with(func(h *Guide) { h.Loss = wrongGrad }).Gradient(x, 0.5, 2)
			return err
		},
		"non-finite loss":    func() error { _, err := with(func(h *Guide) { h.Loss = nanLoss }).Gradient(x, 0.5, 2); return err },
		"model output shape": func() error { _, err := with(func(h *Guide) { h.Model = wrongModel }).Predict(x, 0.5, 2); return err },
		"non-finite model":   func() error { _, err := with(func(h *Guide) { h.Model = nanModel }).Predict(x, 0.5, 2); return err },
		"seed shape":         func() error { _, err := Backprop(tr, access.DFEA{}, mat.NewDense(3, 2, nil)); return err },
		"malformed trajectory": func() error {
			_, err := Backprop(&Trajectory{States: tr.States}, access.DFEA{}, x)
			return err
		},
		"steps 0":           func() error { _, err := g.Sample(context.Background(), x, Config{}); return err },
		"window past Steps": func() error { c := ok; c.To = 11; _, err := g.Sample(context.Background(), x, c); return err },
		"window negative":   func() error { c := ok; c.From = -1; _, err := g.Sample(context.Background(), x, c); return err },
		"window reversed":   func() error { c := ok; c.From = 7; _, err := g.Sample(context.Background(), x, c); return err },
		"window, inner 0":   func() error { c := ok; c.InnerSteps = 0; _, err := g.Sample(context.Background(), x, c); return err },
		"strength NaN": func() error {
			c := ok
			c.Strength = math.NaN()
			_, err := g.Sample(context.Background(), x, c)
			return err
		},
		"non-finite x_T": func() error { _, err := g.Sample(context.Background(), nan, ok); return err },
		"empty x_T":      func() error { _, err := g.Sample(context.Background(), &mat.Dense{}, ok); return err },
		"window without loss": func() error {
			_, err := with(func(h *Guide) { h.Loss = nil }).Sample(context.Background(), x, ok)
			return err
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			err := f()
			if err == nil {
				t.Fatal("no error")
			}
			if name != "dimension mismatch" && !errors.Is(err, ErrInput) {
				t.Errorf("error does not wrap ErrInput: %v", err)
			}
		})
	}
	if _, err := g.Sample(context.Background(), x, ok); err != nil {
		t.Errorf("a valid configuration failed: %v", err)
	}
}
