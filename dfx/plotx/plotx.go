// Package plotx holds the few gonum/plot helpers the experiments share: heat
// maps with a colour bar, quiver (arrow) overlays, line plots with optional log
// axes, and Bytes, which renders a plot (or TilesBytes, a grid of plots) as
// PNG or SVG bytes for a report.Figure.
//
// Grids follow one convention throughout: xs has nx increasing values, ys has
// ny increasing values, and a field is z[iy][ix] (ny rows of nx values), so
// z[iy][ix] is the value at (xs[ix], ys[iy]).
//
// Bad shapes or values are reported as errors; drawing panics inside gonum/plot
// (e.g. a log axis over non-positive data) are turned into errors by Bytes.
package plotx

import (
	"bytes"
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// render draws p on a w×h canvas of the given format ("png", "svg", …),
// turning a panic while drawing into an error.
func render(p *plot.Plot, w, h vg.Length, format string) (wt io.WriterTo, err error) {
	if p == nil {
		return nil, fmt.Errorf("plotx: nil plot")
	}
	if !(w > 0 && h > 0) {
		return nil, fmt.Errorf("plotx: canvas size %v×%v must be positive", w, h)
	}
	defer func() {
		if r := recover(); r != nil {
			wt, err = nil, fmt.Errorf("plotx: drawing %q as %s: %v", p.Title.Text, format, r)
		}
	}()
	return p.WriterTo(w, h, format)
}

// Bytes draws p on a w×h canvas in the given format ("png", "svg", "pdf", …).
func Bytes(p *plot.Plot, w, h vg.Length, format string) ([]byte, error) {
	wt, err := render(p, w, h, format)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plotx: encoding %s: %w", format, err)
	}
	return buf.Bytes(), nil
}
