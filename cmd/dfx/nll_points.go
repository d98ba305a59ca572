package main

import (
	"errors"
	"fmt"

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

func readNLLPoints(a nllArgs, budget membudget.Budget) (*nllPoints, error) {
	if !input.IsIDX(a.points) {
		if a.dequantize {
			return nil, errors.New("--dequantize applies to IDX images (8-bit pixels); the --points are CSV/.npy values")
		}
		if a.header && input.IsNPY(a.points) {
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
