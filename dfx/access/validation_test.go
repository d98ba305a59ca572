package access

import (
	"errors"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/tensormat"
)

func TestEstimatorsRejectBadTimesAndShapes(t *testing.T) {
	f := newFixture(t, 3, 4, 2, 0.3)
	net := f.mix.Net()
	vjp, _ := NewVJPTrace(net, 0)
	mv, _ := NewVJPMatVec(net)
	ea, _ := NewDFEA(net)
	if _, err := vjp.Trace(schedule.Coefficients{T: 2, Alpha: 1}, f.xm); !errors.Is(err, schedule.ErrTime) {
		t.Errorf("t = 2 outside VP's [1e-5, 1]: got %v, want ErrTime", err)
	}
	if _, err := vjp.Trace(mustAt(f.s, 0.3), &mat.Dense{}); err == nil {
		t.Error("empty batch accepted")
	}
	if _, err := f.mix.Trace(mustAt(f.s, 0.3), mat.NewDense(1, 2, []float64{1, 2})); err == nil {
		t.Error("query of dim 2 accepted by a 3-dim mixture")
	}
	if _, err := mv.Apply(score.State{At: mustAt(f.s, 0.3), X: f.xm}, tensormat.Rows(f.x[:1])); err == nil {
		t.Error("fewer vectors than queries accepted")
	}
	if _, err := ea.Apply(score.State{At: mustAt(f.s, 0.3), X: f.xm, Endpoint: tensormat.Rows(f.x[:1])}, f.xm); err == nil {
		t.Error("fewer endpoints than queries accepted")
	}
	if _, err := ea.Apply(score.State{At: mustAt(f.s, 0.3), X: f.xm}, f.xm); err == nil {
		t.Error("DF-EA MatVec without an Endpoint accepted")
	}
	if _, err := NewHutchinson(net, 0, Rademacher, 1); err == nil {
		t.Error("K = 0 accepted")
	}
	if _, err := NewHutchPP(net, 2, 1); err == nil {
		t.Error("Hutch++ with 2 matvecs accepted")
	}
	noT := *net
	noT.T = nil
	if _, err := NewDFTM(&noT); err == nil {
		t.Error("DF-TM without a trace network accepted")
	}
}

func TestSameSeedGivesSameHutchinsonEstimate(t *testing.T) {
	f := newFixture(t, 5, 4, 3, 0.3)
	h, _ := NewHutchinson(f.mix.Net(), 3, Gaussian, 7)
	a, err := h.Trace(mustAt(f.s, f.t), f.xm)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := h.Trace(mustAt(f.s, f.t), f.xm)
	h.Seed = 8
	c, _ := h.Trace(mustAt(f.s, f.t), f.xm)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("query %d: %g then %g with the same seed", i, a[i], b[i])
		}
	}
	if a[0] == c[0] {
		t.Error("a different seed gave the same estimate")
	}
}
