package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/membudget"
	"github.com/dfx-lab/dfx/mnist"
)

// --- points -------------------------------------------------------------------

// nllPoints are the points and what is known of their quantisation.
type nllPoints struct {
	x           *mat.Dense
	images      bool // 8-bit IDX images scaled to [−1, 1]
	dequantized bool
}

// isIDX reports whether path is read as IDX images: a .gz file, a name
// IDX files carry (.idx, -ubyte), or a file whose first two bytes are 0, as
// every IDX magic's are (no CSV or .npy file starts so). One with another
// magic than the images' 0x00000803 (a label file, say) is then refused by
// mnist.ReadImages, instead of being read as CSV.
func isIDX(path string) bool {
	if path == "-" {
		return false
	}
	if name := strings.ToLower(filepath.Base(path)); strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, "-ubyte") {
		return true
	}
	f, err := input.Open(path)
	if err != nil {
		return false // input.ReadFile reports it
	}
	defer f.Close()
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	return n == 2 && magic == [2]byte{0, 0}
}

// isNPY reports whether path is a .npy file (by its name or its magic bytes).
func isNPY(path string) bool {
	if strings.HasSuffix(strings.ToLower(path), ".npy") {
		return true
	}
	if path == "-" {
		return false
	}
	f, err := input.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [6]byte
	n, _ := io.ReadFull(f, magic[:])
	return n == 6 && string(magic[:]) == "\x93NUMPY"
}

func readNLLPoints(a nllArgs, budget membudget.Budget) (*nllPoints, error) {
	if !isIDX(a.points) {
		if a.dequantize {
			return nil, errors.New("--dequantize applies to IDX images (8-bit pixels); the --points are CSV/.npy values")
		}
		if a.header && isNPY(a.points) {
			return nil, errors.New("--header applies to CSV --points, not .npy files (which have no header line to skip)")
		}
		x, err := input.ReadFile(a.points, input.Options{Header: a.header, MaxBytes: budget.Bytes})
		if err != nil {
			return nil, err
		}
		return &nllPoints{x: x}, nil
	}
	if a.header {
		return nil, errors.New("--header applies to CSV --points, not IDX images")
	}
	im, err := mnist.ReadImages(a.points)
	if err != nil {
		return nil, err
	}
	if err := budget.Check(fmt.Sprintf("%d IDX images of %d×%d", im.N, im.Rows, im.Cols), float64(im.N)*float64(im.Dim())*8, "pass fewer images"); err != nil {
		return nil, err
	}
	set := &mnist.Set{Images: im}
	var x *mat.Dense
	if a.dequantize {
		x, err = set.Dequantized(0, im.N, uint64(a.seed))
	} else {
		x, err = set.Scaled(0, im.N)
	}
	if err != nil {
		return nil, err
	}
	return &nllPoints{x: x, images: true, dequantized: a.dequantize}, nil
}
