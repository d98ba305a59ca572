// Package plotx holds the few gonum/plot helpers the experiments share: heat
// maps with a colour bar, quiver (arrow) overlays, line plots with optional log
// axes, and writers that produce PNG/SVG bytes or files atomically.
//
// Grids follow one convention throughout: xs has nx increasing values, ys has
// ny increasing values, and a field is z[iy][ix] (ny rows of nx values), so
// z[iy][ix] is the value at (xs[ix], ys[iy]).
//
// Bad shapes or values are reported as errors; drawing panics inside gonum/plot
// (e.g. a log axis over non-positive data) are turned into errors by the writers.
package plotx

import (
	"bytes"
	"fmt"
	"io"

	"github.com/dfx-lab/dfx/internal/atomicfile"
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

// PNGBytes draws p as a PNG image of w×h (at gonum/plot's default 96 dpi,
// a 4-inch width is 384 pixels), ready for gonbui.DisplayPNG.
func PNGBytes(p *plot.Plot, w, h vg.Length) ([]byte, error) { return Bytes(p, w, h, "png") }

// SVGBytes draws p as an SVG document of w×h.
func SVGBytes(p *plot.Plot, w, h vg.Length) ([]byte, error) { return Bytes(p, w, h, "svg") }

// Save draws p in the given format and writes it atomically to path (parent
// folders are created; a failed write leaves any previous file intact).
func Save(p *plot.Plot, w, h vg.Length, format, path string) error {
	wt, err := render(p, w, h, format)
	if err != nil {
		return fmt.Errorf("%w (for %s)", err, path)
	}
	return atomicfile.Write(path, func(out io.Writer) error {
		_, err := wt.WriteTo(out)
		return err
	})
}

// SavePNG writes p as a w×h PNG image to path, atomically.
func SavePNG(p *plot.Plot, w, h vg.Length, path string) error { return Save(p, w, h, "png", path) }

// SaveSVG writes p as a w×h SVG document to path, atomically.
func SaveSVG(p *plot.Plot, w, h vg.Length, path string) error { return Save(p, w, h, "svg", path) }
