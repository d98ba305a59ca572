package adjoint

import (
	"context"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models/onnximport/onnxtest"
)

// Adjoint guidance runs on an imported network with the exact VJP operator
// and with DF-EA. On the PyTorch MLP fixture (untrained, imported on the VP
// schedule) the VJP adjoint is the derivative of the inner prediction's
// loss (central differences agree), and guided sampling with it brings the
// samples closer to a target than the same noise unguided; DF-EA, whose
// Fisher is built from the denoiser and is accurate only for a network near
// the data's posterior, is only run (an untrained network is far from any).
func TestAdjointGuidanceOnAnImportedNetwork(t *testing.T) {
	im := onnxtest.MLP(t, schedule.DefaultVP())
	net := onnxtest.Net(t, im)
	target := []float64{3, -3, 3, -3, 3, -3, 3, -3}
	loss := dfxadjoint.SquaredDistance(target)
	xT := schedule.SamplePrior(schedule.Prior(im.Schedule), 8, 8, rand.New(rand.NewPCG(1, 1)))
	meanLoss := func(x *mat.Dense) float64 {
		l, _, err := loss(x)
		if err != nil {
			t.Fatal(err)
		}
		return floats.Sum(l) / float64(len(l))
	}
	g := dfxadjoint.Guide{Schedule: im.Schedule, Model: access.NetModel{Net: net}, Loss: loss}
	cfg := dfxadjoint.Config{Steps: 10, InnerSteps: 3}
	plain, err := g.Sample(context.Background(), xT, cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := meanLoss(plain.X)
	checkAdjointIsTheDerivative(t, g, net)
	for _, op := range []string{"vjp", "df-ea"} {
		if g.Operator, err = access.NewOperator(op, access.Env{Net: net}); err != nil {
			t.Fatal(err)
		}
		cfg.From, cfg.To, cfg.Strength, cfg.Normalize = 2, 9, 0.2, true
		guided, err := g.Sample(context.Background(), xT, cfg)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		got := meanLoss(guided.X)
		t.Logf("%s: mean loss %.4g guided, %.4g unguided; %d Fisher products", op, got, base, guided.OperatorCalls)
		if op == "vjp" && !(got < 0.95*base) || guided.OperatorCalls != 7*3 || mat.Norm(guided.X, 1) > 1e300 {
			t.Errorf("%s: mean loss %.4g guided, %.4g unguided (want 5%% less with VJP), %d Fisher products (want 21)", op, got, base, guided.OperatorCalls)
		}
	}
}

// checkAdjointIsTheDerivative compares ⟨λ, δ⟩ of the VJP adjoint at t = 0.5
// with the central difference of the inner prediction's loss along δ.
func checkAdjointIsTheDerivative(t *testing.T, g dfxadjoint.Guide, net *access.Net) {
	t.Helper()
	var err error
	if g.Operator, err = access.NewOperator("vjp", access.Env{Net: net}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	c, _ := schedule.At(g.Schedule, 0.5)
	x := schedule.SamplePrior(c, 4, 8, rng)
	delta := schedule.SamplePrior(schedule.Coefficients{Sigma: 1}, 4, 8, rng)
	res, err := g.Gradient(x, 0.5, 3)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-2
	lossAt := func(sign float64) []float64 {
		xs := mat.DenseCopyOf(x)
		xs.Apply(func(i, j int, v float64) float64 { return v + sign*h*delta.At(i, j) }, xs)
		r, err := g.Gradient(xs, 0.5, 3)
		if err != nil {
			t.Fatal(err)
		}
		return r.Loss
	}
	plus, minus := lossAt(1), lossAt(-1)
	for i := range 4 {
		fd := (plus[i] - minus[i]) / (2 * h)
		got := mat.Dot(res.Grad.RowView(i), delta.RowView(i))
		if d := got - fd; d*d > 1e-4*fd*fd+1e-6 {
			t.Errorf("row %d: ⟨λ, δ⟩ = %.6g, central difference %.6g", i, got, fd)
		}
	}
}
