package plotx

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Quiver adds to p an arrow at every grid point (xs[ix], ys[iy]) for the vector
// field (u[iy][ix], v[iy][ix]), from the point to the point + scale·(u, v) in
// data units. scale <= 0 picks one so the longest arrow is 0.9 of the smallest
// grid spacing. Non-finite vectors are skipped. Arrows are black; change them
// through the returned style pointer if needed.
func Quiver(p *plot.Plot, xs, ys []float64, u, v [][]float64, scale float64) error {
	_, err := quiverStyled(p, xs, ys, u, v, scale)
	return err
}

// quiverStyled is Quiver returning the arrows' line style for adjustment
// (colour, width) before the plot is drawn.
func quiverStyled(p *plot.Plot, xs, ys []float64, u, v [][]float64, scale float64) (*draw.LineStyle, error) {
	if p == nil {
		return nil, fmt.Errorf("plotx: Quiver on a nil plot")
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"xs", checkAxis("xs", xs)}, {"ys", checkAxis("ys", ys)},
		{"u", checkField("u", u, len(xs), len(ys))}, {"v", checkField("v", v, len(xs), len(ys))},
	} {
		if c.err != nil {
			return nil, fmt.Errorf("quiver: %w", c.err)
		}
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("plotx: quiver scale %v is not finite", scale)
	}
	if scale <= 0 {
		scale = autoScale(xs, ys, u, v)
	}
	q := &quiver{xs: xs, ys: ys, u: u, v: v, scale: scale,
		style: draw.LineStyle{Color: color.Black, Width: vg.Points(0.7)}}
	p.Add(q)
	return &q.style, nil
}

// autoScale makes the longest arrow 0.9 of the smallest grid spacing.
func autoScale(xs, ys []float64, u, v [][]float64) float64 {
	spacing := math.Inf(1)
	for _, a := range [][]float64{xs, ys} {
		for i := 1; i < len(a); i++ {
			spacing = math.Min(spacing, a[i]-a[i-1])
		}
	}
	var longest float64
	for iy := range u {
		for ix := range u[iy] {
			if l := math.Hypot(u[iy][ix], v[iy][ix]); !math.IsNaN(l) && !math.IsInf(l, 0) {
				longest = math.Max(longest, l)
			}
		}
	}
	if longest == 0 {
		return 1
	}
	return 0.9 * spacing / longest
}

type quiver struct {
	xs, ys []float64
	u, v   [][]float64
	scale  float64
	style  draw.LineStyle
}

// DataRange implements plot.DataRanger: the grid itself.
func (q *quiver) DataRange() (xmin, xmax, ymin, ymax float64) {
	return q.xs[0], q.xs[len(q.xs)-1], q.ys[0], q.ys[len(q.ys)-1]
}

// Plot implements plot.Plotter.
func (q *quiver) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for iy, y := range q.ys {
		for ix, x := range q.xs {
			du, dv := q.u[iy][ix], q.v[iy][ix]
			if math.IsNaN(du) || math.IsNaN(dv) || math.IsInf(du, 0) || math.IsInf(dv, 0) {
				continue
			}
			p0 := vg.Point{X: trX(x), Y: trY(y)}
			p1 := vg.Point{X: trX(x + q.scale*du), Y: trY(y + q.scale*dv)}
			d := p1.Sub(p0)
			length := vg.Length(math.Hypot(float64(d.X), float64(d.Y)))
			if length < 0.5 {
				continue
			}
			c.StrokeLines(q.style, c.ClipLinesXY([]vg.Point{p0, p1})...)
			head := min(0.35*length, 5)
			ang := math.Atan2(float64(d.Y), float64(d.X))
			for _, s := range []float64{-1, 1} {
				a := ang + math.Pi - s*0.45
				tip := vg.Point{X: p1.X + head*vg.Length(math.Cos(a)), Y: p1.Y + head*vg.Length(math.Sin(a))}
				c.StrokeLines(q.style, c.ClipLinesXY([]vg.Point{p1, tip})...)
			}
		}
	}
}
