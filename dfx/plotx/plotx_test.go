package plotx

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	_ "image/png"
	"math"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// gaussianField returns a grid and exp(−r²/2) with its gradient on it.
func gaussianField(nx, ny int) (xs, ys []float64, z, u, v [][]float64) {
	xs, ys = make([]float64, nx), make([]float64, ny)
	for i := range xs {
		xs[i] = -2 + 4*float64(i)/float64(nx-1)
	}
	for i := range ys {
		ys[i] = -1.5 + 3*float64(i)/float64(ny-1)
	}
	z, u, v = make([][]float64, ny), make([][]float64, ny), make([][]float64, ny)
	for iy, y := range ys {
		z[iy], u[iy], v[iy] = make([]float64, nx), make([]float64, nx), make([]float64, nx)
		for ix, x := range xs {
			g := math.Exp(-(x*x + y*y) / 2)
			z[iy][ix], u[iy][ix], v[iy][ix] = g, -x*g, -y*g
		}
	}
	return xs, ys, z, u, v
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	if format != "png" {
		t.Fatalf("format %q, want png", format)
	}
	return img
}

func TestPNGBytesDecodeToTheRequestedSize(t *testing.T) {
	xs, ys, z, u, v := gaussianField(21, 15)
	p, err := HeatMap("gaussian", xs, ys, z, HeatOptions{XLabel: "x", YLabel: "y", ColorBarLabel: "density"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Quiver(p, xs, ys, u, v, 0); err != nil {
		t.Fatal(err)
	}
	b, err := Bytes(p, 4*vg.Inch, 3*vg.Inch, "png") // 96 dpi
	if err != nil {
		t.Fatal(err)
	}
	if got := decodePNG(t, b).Bounds().Size(); got != (image.Point{X: 384, Y: 288}) {
		t.Fatalf("image size %v, want 384×288", got)
	}
}

func TestHeatMapColourBarShrinksTheDataArea(t *testing.T) {
	xs, ys, z, _, _ := gaussianField(5, 4)
	c := vg.Rectangle{Max: vg.Point{X: 300, Y: 200}}
	areaWidth := func(o HeatOptions) vg.Length {
		p, err := HeatMap("", xs, ys, z, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Bytes(p, 300, 200, "png")
		if err != nil || len(b) == 0 {
			t.Fatal(err)
		}
		dc := p.DataCanvas(drawCanvas(c))
		return dc.Max.X - dc.Min.X
	}
	with, without := areaWidth(HeatOptions{}), areaWidth(HeatOptions{NoColorBar: true})
	if !(with < without-barWidth) {
		t.Fatalf("data area %v wide with the colour bar, %v without: the bar did not reserve room", with, without)
	}
}

func TestHeatMapBadShapesGiveErrors(t *testing.T) {
	xs, ys, z, _, _ := gaussianField(4, 3)
	nan := math.NaN()
	cases := map[string]struct {
		xs, ys []float64
		z      [][]float64
		opts   []HeatOptions
	}{
		"too few rows":          {xs, ys, z[:2], nil},
		"ragged row":            {xs, ys, [][]float64{z[0], z[1][:3], z[2]}, nil},
		"one x":                 {xs[:1], ys, [][]float64{{1}, {2}, {3}}, nil},
		"decreasing ys":         {xs, []float64{3, 2, 1}, z, nil},
		"NaN in xs":             {[]float64{0, nan, 2, 3}, ys, z, nil},
		"all NaN":               {xs, ys, [][]float64{{nan, nan, nan, nan}, {nan, nan, nan, nan}, {nan, nan, nan, nan}}, nil},
		"log of negative field": {xs, ys, [][]float64{{-1, -1, -1, -1}, {-1, -1, -1, -1}, {-1, -1, -1, -1}}, []HeatOptions{{LogZ: true}}},
		"two option values":     {xs, ys, z, []HeatOptions{{}, {}}},
	}
	for name, c := range cases {
		if _, err := HeatMap(name, c.xs, c.ys, c.z, c.opts...); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestHeatMapConstantAndLogFieldsDraw(t *testing.T) {
	xs, ys, z, _, _ := gaussianField(6, 5)
	flat := [][]float64{}
	for range ys {
		flat = append(flat, []float64{2, 2, 2, 2, 2, 2})
	}
	z[0][0] = 0 // blank under LogZ
	for name, f := range map[string]struct {
		z    [][]float64
		opts HeatOptions
	}{"constant": {flat, HeatOptions{}}, "log": {z, HeatOptions{LogZ: true}}} {
		p, err := HeatMap(name, xs, ys, f.z, f.opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Bytes(p, 200, 150, "png"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestQuiverBadShapesGiveErrors(t *testing.T) {
	xs, ys, _, u, v := gaussianField(4, 3)
	p := plot.New()
	if err := Quiver(p, xs, ys, u[:2], v, 1); err == nil {
		t.Error("short u: want an error")
	}
	if err := Quiver(p, xs, ys, u, [][]float64{v[0], v[1], v[2][:1]}, 1); err == nil {
		t.Error("ragged v: want an error")
	}
	if err := Quiver(p, xs, ys, u, v, math.Inf(1)); err == nil {
		t.Error("infinite scale: want an error")
	}
	if err := Quiver(nil, xs, ys, u, v, 1); err == nil {
		t.Error("nil plot: want an error")
	}
}

func TestLinesValidateAndDropNonPositiveOnLogAxes(t *testing.T) {
	if _, err := Lines("none", "x", "y"); err == nil {
		t.Error("no series: want an error")
	}
	if _, err := Lines("bad", "x", "y", Series{X: []float64{1, 2}, Y: []float64{1}}); err == nil {
		t.Error("mismatched lengths: want an error")
	}
	if _, err := LogLines("all dropped", "x", "y", false, true, Series{X: []float64{1, 2}, Y: []float64{0, -1}}); err == nil {
		t.Error("no positive y on a log axis: want an error")
	}
	p, err := LogLines("error vs K", "K", "error", true, true,
		Series{Name: "Hutchinson", X: []float64{0, 1, 10, 100}, Y: []float64{1, 1, 0.3, 0.1}, Points: true},
		Series{Name: "DF-TM", X: []float64{1, 10, 100}, Y: []float64{0.05, math.NaN(), 0.05}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bytes(p, 300, 200, "png")
	if err != nil {
		t.Fatal(err)
	}
	decodePNG(t, b)
}

func TestDrawingPanicBecomesError(t *testing.T) {
	p := plot.New()
	p.Y.Scale = plot.LogScale{}
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -1}, {X: 1, Y: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	if _, err := Bytes(p, 100, 100, "png"); err == nil {
		t.Fatal("a log axis over a negative value: want an error, not a panic")
	}
	if _, err := Bytes(plot.New(), 0, 100, "png"); err == nil {
		t.Fatal("zero width: want an error")
	}
}

func TestDivergingHeatMapIsCentredAtZero(t *testing.T) {
	z := [][]float64{{-2, 0.5}, {1, 0.25}}
	_, b, err := heatMapRange("d", []float64{0, 1}, []float64{0, 1}, z, HeatOptions{Diverging: true})
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := b(); lo != -2 || hi != 2 {
		t.Errorf("diverging range [%g, %g], want [−2, 2]", lo, hi)
	}
	_, b, _ = heatMapRange("d", []float64{0, 1}, []float64{0, 1}, z, HeatOptions{})
	if lo, hi := b(); lo != -2 || hi != 1 {
		t.Errorf("plain range [%g, %g], want the data's [−2, 1]", lo, hi)
	}
}

func TestLinesDrawIntervalsAndRefuseMismatchedOnes(t *testing.T) {
	x, y := []float64{1, 2, 3}, []float64{1, 2, 3}
	for _, bars := range []bool{false, true} {
		p, err := Lines("i", "x", "y", Series{Name: "m", X: x, Y: y, Lo: []float64{0.5, 1.5, 2.5}, Hi: []float64{1.5, 2.5, 3.5}, Bars: bars})
		if err != nil {
			t.Fatal(err)
		}
		if p.Y.Min > 0.5 || p.Y.Max < 3.5 { // the interval is drawn: the axis covers it
			t.Errorf("bars %v: y axis [%g, %g] does not cover the interval [0.5, 3.5]", bars, p.Y.Min, p.Y.Max)
		}
	}
	if _, err := Lines("i", "x", "y", Series{X: x, Y: y, Lo: []float64{1}, Hi: []float64{1}}); err == nil {
		t.Error("an interval of the wrong length was accepted")
	}
	if _, err := Lines("i", "x", "y", Series{X: x, Y: y, XLo: []float64{1}, XHi: []float64{1}}); err == nil {
		t.Error("an x interval of the wrong length was accepted")
	}
}

func TestXIntervalsWidenTheXAxisAndSkipPointsOutsideThem(t *testing.T) {
	x, y := []float64{1, 2, 3}, []float64{1, 2, 3}
	p, err := Lines("i", "x", "y", Series{X: x, Y: y, XLo: []float64{0.25, 1.5, 2.5}, XHi: []float64{1.5, 2.5, 4}, Lo: []float64{0, 1, 2}, Hi: []float64{2, 3, 4}, Bars: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min > 0.25 || p.X.Max < 4 { // x bars are drawn: the axis covers them
		t.Errorf("x axis [%g, %g] does not cover the x intervals [0.25, 4]", p.X.Min, p.X.Max)
	}
	if p.Y.Min > 0 || p.Y.Max < 4 {
		t.Errorf("y axis [%g, %g] does not cover the y intervals [0, 4]", p.Y.Min, p.Y.Max)
	}
	// an interval that does not hold its point is not a bar around it
	p, err = Lines("i", "x", "y", Series{X: x, Y: y, XLo: []float64{-5, 1.5, 2.5}, XHi: []float64{-4, 2.5, 3.5}})
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min < 0 {
		t.Errorf("x axis starts at %g: the interval [−5, −4] around x = 1 was drawn", p.X.Min)
	}
}

// midPixel is the colour half-way between the two points (0, 0) and (1, 1)
// of s, drawn by Lines on a 300×200 PNG.
func midPixel(t *testing.T, s Series) color.Color {
	t.Helper()
	s.X, s.Y = []float64{0, 1}, []float64{0, 1}
	p, err := Lines("", "x", "y", s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bytes(p, 300, 200, "png")
	if err != nil {
		t.Fatal(err)
	}
	dc := p.DataCanvas(drawCanvas(vg.Rectangle{Max: vg.Point{X: 300, Y: 200}}))
	px, py := dc.X(p.X.Norm(0.5)), dc.Y(p.Y.Norm(0.5))
	return decodePNG(t, b).At(int(px*96/72), int((200-py)*96/72))
}

// TestNoLineDrawsPointsAlone: half-way between two points of a NoLine series
// the data area shows no curve's colour; with a line it does.
func TestNoLineDrawsPointsAlone(t *testing.T) {
	red := func(c color.Color) bool { r, g, _, _ := c.RGBA(); return r>>8 > 150 && g>>8 < 150 }
	if c := midPixel(t, Series{}); !red(c) {
		t.Fatalf("with a line: %v half-way, want the first series' colour (the test cannot see lines)", c)
	}
	if c := midPixel(t, Series{NoLine: true}); red(c) {
		t.Errorf("NoLine: %v half-way, want no curve there", c)
	}
}

func TestSeriesColorReplacesTheDefaultColour(t *testing.T) {
	r, g, b, _ := midPixel(t, Series{Color: color.NRGBA{B: 255, A: 255}}).RGBA()
	if !(b>>8 > 150 && r>>8 < 100 && g>>8 < 100) {
		t.Errorf("a blue series is drawn as (%d, %d, %d)", r>>8, g>>8, b>>8)
	}
}

func TestNominalXLabelsCategoriesWithRoomAtTheEnds(t *testing.T) {
	p, err := Lines("", "sampler", "reward", Series{X: []float64{0, 1, 2}, Y: []float64{1, 3, 2}, NoLine: true})
	if err != nil {
		t.Fatal(err)
	}
	NominalX(p, "a", "b", "c")
	if p.X.Min > -0.5 || p.X.Max < 2.5 {
		t.Errorf("x axis [%g, %g], want half a category beyond [0, 2]", p.X.Min, p.X.Max)
	}
	if p.Y.Min > 0.9 || p.Y.Max < 3.1 {
		t.Errorf("y axis [%g, %g], want 5 %% of the range beyond the markers' [1, 3]", p.Y.Min, p.Y.Max)
	}
	var got []string
	for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" {
			got = append(got, fmt.Sprintf("%g:%s", tk.Value, tk.Label))
		}
	}
	if want := "[0:a 1:b 2:c]"; fmt.Sprint(got) != want {
		t.Errorf("x ticks %v, want %s", got, want)
	}
}

// TestRoomPadsLinearAndLogAxes: Room leaves 5 % of each axis's span (of
// its log on a log axis) beyond the extreme markers.
func TestRoomPadsLinearAndLogAxes(t *testing.T) {
	p, err := LogLines("", "time [s]", "miss", true, false, Series{X: []float64{0.001, 10}, Y: []float64{2, 4}, NoLine: true})
	if err != nil {
		t.Fatal(err)
	}
	Room(p)
	// log x: 4 decades, 0.2 decade of room each side; linear y: 0.1.
	if math.Abs(math.Log10(p.X.Min)+3.2) > 1e-9 || math.Abs(math.Log10(p.X.Max)-1.2) > 1e-9 {
		t.Errorf("log x axis [%g, %g], want [10^-3.2, 10^1.2]", p.X.Min, p.X.Max)
	}
	if math.Abs(p.Y.Min-1.9) > 1e-9 || math.Abs(p.Y.Max-4.1) > 1e-9 {
		t.Errorf("linear y axis [%g, %g], want [1.9, 4.1]", p.Y.Min, p.Y.Max)
	}
}

// TestLogYLabelLeavesTheDataAreaItsHeight: on a log y axis a long label
// does not shrink the data area from the top (gonum pads for a centred
// label at the range's arithmetic middle, near the top of a log axis).
func TestLogYLabelLeavesTheDataAreaItsHeight(t *testing.T) {
	top := func(ylabel string) vg.Length {
		p, err := LogLines("", "x", ylabel, true, true, Series{X: []float64{0.001, 0.1}, Y: []float64{0.0007, 1.4}, NoLine: true})
		if err != nil {
			t.Fatal(err)
		}
		return p.DataCanvas(draw.New(vgimg.New(10*vg.Inch, 4*vg.Inch))).Max.Y
	}
	if short, long := top("y"), top("a label as long as many a figure's y label [nats]"); math.Abs(float64(short-long)) > 1 {
		t.Errorf("data area top %v with a short y label, %v with a long one: want the same", short, long)
	}
}

// heatMapRange is heatMap returning its colour bar's range.
func heatMapRange(title string, xs, ys []float64, z [][]float64, o HeatOptions) (*plot.Plot, func() (float64, float64), error) {
	p, b, err := heatMap(title, xs, ys, z, o)
	if err != nil {
		return nil, nil, err
	}
	return p, func() (float64, float64) { return b.min, b.max }, nil
}
