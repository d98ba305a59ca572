package plotx

import (
	"bytes"
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// TilesBytes draws the plots in a grid of rows × cols panels (row-major,
// len(plots) ≤ rows·cols; missing panels stay blank), each panel w×h, as
// "png" or "svg".
func TilesBytes(plots []*plot.Plot, cols int, w, h vg.Length, format string) (out []byte, err error) {
	if len(plots) == 0 || cols < 1 {
		return nil, fmt.Errorf("plotx: tiles need plots and cols ≥ 1 (got %d plots, %d cols)", len(plots), cols)
	}
	grid := tileGrid(plots, cols)
	rows := len(grid)
	c, err := tileCanvas(format, w*vg.Length(cols), h*vg.Length(rows))
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("plotx: drawing tiles: %v", r)
		}
	}()
	dc := draw.New(c)
	// The titles are drawn here, in a band of their own at the top of each
	// tile, not by the plots: plot.Align lines up the data areas, and a plot
	// whose axis label or tick labels reach higher (a y label longer than
	// the data area, say) would otherwise put its title higher than its
	// neighbour's.
	titles := make([][]string, rows)
	var band vg.Length
	for i := range grid {
		titles[i] = make([]string, cols)
		for j, p := range grid[i] {
			if p == nil || p.Title.Text == "" {
				continue
			}
			titles[i][j] = p.Title.Text
			band = max(band, p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y+p.Title.Padding)
			defer func(p *plot.Plot, s string) { p.Title.Text = s }(p, p.Title.Text)
			p.Title.Text = ""
		}
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter, PadY: vg.Millimeter + band,
		PadTop: vg.Millimeter + band, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	canvases := plot.Align(grid, t, dc)
	for i := range grid {
		// Just above the row's data areas (plot.Align makes their tops
		// equal), not at the top of the tile: a tall y label elsewhere in
		// the row would otherwise leave a wide gap under every title.
		var dataTop vg.Length
		for j, p := range grid[i] {
			if p != nil {
				dataTop = max(dataTop, p.DataCanvas(canvases[i][j]).Max.Y)
			}
		}
		for j, p := range grid[i] {
			if p == nil {
				continue
			}
			p.Draw(canvases[i][j])
			if s := titles[i][j]; s != "" {
				sty := p.Title.TextStyle
				// the title style aligns the block's top at y
				y := min(dataTop+p.Title.Padding+sty.Rectangle(s).Size().Y, t.At(dc, j, i).Max.Y+band)
				dc.FillText(sty, vg.Point{X: canvases[i][j].Center().X, Y: y + sty.FontExtents().Descent}, s)
			}
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plotx: encoding tiles: %w", err)
	}
	return buf.Bytes(), nil
}

// tileGrid lays plots out row by row, cols to a row (nil where the last
// row has no plot).
func tileGrid(plots []*plot.Plot, cols int) [][]*plot.Plot {
	rows := (len(plots) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
		for j := range grid[i] {
			if k := i*cols + j; k < len(plots) {
				grid[i][j] = plots[k]
			}
		}
	}
	return grid
}

// tileCanvas is a W×H canvas that encodes as format (png or svg).
func tileCanvas(format string, W, H vg.Length) (interface {
	vg.CanvasSizer
	io.WriterTo
}, error) {
	switch format {
	case "png":
		return vgimg.PngCanvas{Canvas: vgimg.New(W, H)}, nil
	case "svg":
		return vgsvg.New(W, H), nil
	}
	return nil, fmt.Errorf("plotx: tiles: unknown format %q (png, svg)", format)
}
