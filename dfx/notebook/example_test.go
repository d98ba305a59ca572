package notebook_test

import (
	"context"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/notebook"
	"github.com/dfx-lab/dfx/dfx/report"
)

// scaled is a result: one typed table of y = s·x.
type scaled struct{ s float64 }

func (r scaled) Report() (*report.Report, error) {
	t := &report.Table{Name: "scaled", Columns: []report.Column{{Name: "x"}, {Name: "s·x", Key: "y", Format: "%.2f"}}}
	for _, x := range []float64{1, 2} {
		t.Add(report.Float(x), report.Float(r.s*x))
	}
	return &report.Report{Name: "scaled", Tables: []*report.Table{t}}, nil
}

// A notebook cell with a slider: in a live notebook the computation runs
// again at every turn of the knob and its table replaces the last one;
// outside a notebook (here, a test) it runs once at the knob's default and
// displays nothing.
func ExampleKnobs() {
	ks := notebook.NewKnobs()
	scale := ks.Slider("scale", []float64{0.5, 1, 2}, 2)
	ks.Explore(func(ctx context.Context) (report.Result, error) {
		fmt.Println("computing at scale", scale.Float())
		return scaled{scale.Float()}, nil
	})
	// Output: computing at scale 2
}
