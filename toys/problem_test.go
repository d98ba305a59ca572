package toys

import (
	"context"
	"fmt"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

func ExampleProblem() {
	p, err := Problem("checkerboard")
	if err != nil {
		panic(err)
	}
	data, err := p.Train(context.Background())
	if err != nil {
		panic(err)
	}
	n, d := data.Dims()
	fmt.Println(p.Name, p.Dim, n, d, p.Check() == nil)
	// Output: checkerboard 2 5000 2 true
}

// TestToyProblemIsItsPointsTheirMixtureAndTheCommittedNetworks: the
// problem's exact reference is the Dirac mixture of its own training
// points, and its networks are the committed first seed's, with t_θ and ν_θ.
func TestToyProblemIsItsPointsTheirMixtureAndTheCommittedNetworks(t *testing.T) {
	ctx := context.Background()
	p, err := Problem("moons")
	if err != nil {
		t.Fatal(err)
	}
	data, err := p.Train(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Sample("moons", 5000, 1)
	if err != nil || !mat.Equal(data, want) {
		t.Fatalf("training points are not Sample(moons, 5000, 1): %v", err)
	}
	ex, err := p.Exact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := mixture.NewDirac(want, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := schedule.At(p.Schedule, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	q := mixture.Query{At: c, X: want.Slice(0, 8, 0, 2).(*mat.Dense), Want: mixture.Trace}
	a, errA := ex.Eval(q)
	b, errB := ref.Eval(q)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	for i := range a.Trace {
		if a.Trace[i] != b.Trace[i] {
			t.Errorf("query %d: tr F %g, the training points' mixture %g", i, a.Trace[i], b.Trace[i])
		}
	}
	nets, err := p.Networks(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if nets.Net == nil || nets.Net.T == nil || nets.Net.Nu == nil {
		t.Fatalf("networks %+v: want ε, t_θ and ν_θ", nets)
	}
	if _, err := nets.Net.EpsAt(c, q.X); err != nil {
		t.Fatal(err)
	}
	if _, err := (ProblemConfig{Dataset: "moons", Schedule: "no-such"}).Problem(); err == nil {
		t.Error("an unknown schedule is accepted")
	}
}
