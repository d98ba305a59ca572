package plotx

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

func TestTilesHaveTheSizeOfTheirPanels(t *testing.T) {
	ps := []*plot.Plot{plot.New(), plot.New(), plot.New()}
	b, err := TilesBytes(ps, 2, 2*vg.Inch, 1*vg.Inch, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != 4*96 || h != 2*96 {
		t.Errorf("size %d×%d, want %d×%d", w, h, 4*96, 2*96)
	}
	if _, err := TilesBytes(nil, 2, vg.Inch, vg.Inch, "png"); err == nil {
		t.Error("no plots accepted")
	}
	if _, err := TilesBytes(ps, 2, vg.Inch, vg.Inch, "gif"); err == nil {
		t.Error("unknown format accepted")
	}
}

// topInk is the first row from the top of img's columns [x0, x1) holding a
// pixel that is not white.
func topInk(img image.Image, x0, x1 int) int {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := x0; x < x1; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				return y
			}
		}
	}
	return b.Max.Y
}

func TestTilesPutTitlesOfARowAtOneHeight(t *testing.T) {
	xs := []float64{0.3, 0.5, 0.7}
	p1, err := Lines("left panel title", "t", "cosine", Series{Name: "a", X: xs, Y: []float64{-0.3, 0.1, 0.4}})
	if err != nil {
		t.Fatal(err)
	}
	// a y label about as long as the data area is high reaches above it
	// (exact_gradients.png of the adjoint study had this)
	p2, err := LogLines("right panel title", "t", "‖λ − λ*‖ / ‖λ*‖ (mean over seeds, log scale)", false, true,
		Series{Name: "a", X: xs, Y: []float64{60, 1e5, 4e9}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := TilesBytes([]*plot.Plot{p1, p2}, 2, 5.5*vg.Inch, 3*vg.Inch, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	w := img.Bounds().Dx()
	// the titles are the highest ink around the middle of each half
	if l, r := topInk(img, w/4-20, w/4+20), topInk(img, 3*w/4-20, 3*w/4+20); l-r > 1 || r-l > 1 {
		t.Errorf("titles start at rows %d (left) and %d (right)", l, r)
	}
	if p1.Title.Text != "left panel title" || p2.Title.Text != "right panel title" {
		t.Errorf("titles not restored: %q, %q", p1.Title.Text, p2.Title.Text)
	}
}
