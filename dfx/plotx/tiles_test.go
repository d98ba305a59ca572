package plotx

import (
	"bytes"
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
