package plotx_test

import (
	"bytes"
	"fmt"

	"github.com/dfx-lab/dfx/dfx/plotx"
)

// A line plot of two series on log axes, rendered to SVG in memory.
func ExampleLogLines() {
	xs := []float64{1, 10, 100}
	p, err := plotx.LogLines("error against steps", "steps", "error", true, true,
		plotx.Series{Name: "euler", X: xs, Y: []float64{1e-1, 1e-2, 1e-3}, Points: true},
		plotx.Series{Name: "heun", X: xs, Y: []float64{1e-2, 1e-4, 1e-6}, Points: true})
	if err != nil {
		panic(err)
	}
	svg, err := plotx.Bytes(p, 300, 200, "svg")
	if err != nil {
		panic(err)
	}
	fmt.Println(bytes.HasPrefix(svg, []byte("<?xml")), bytes.Contains(svg, []byte("heun")))
	// Output:
	// true true
}
