package mnist

import (
	"fmt"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
)

// FitMixture fits a Gaussian mixture (mixture.Fit) to the 60 000
// training images, dequantised with seed 1 and labelled by digit.
func FitMixture(opt mixture.FitOptions) (*mixture.Gaussian, error) {
	set, err := Load(Train)
	if err != nil {
		return nil, err
	}
	x, err := set.Dequantized(0, set.Images.N, 1)
	if err != nil {
		return nil, err
	}
	labels := make([]int, set.Images.N)
	for i, l := range set.Labels {
		labels[i] = int(l)
	}
	g, _, err := mixture.Fit(x, labels, opt)
	if err != nil {
		return nil, fmt.Errorf("mnist: fitting the mixture: %w", err)
	}
	return g, nil
}

// MixtureBPD is a mixture's exact bits per dimension (mean and standard
// error) on the first n test images, dequantised with seed 2: log q at the
// schedule's t_min (σ ≈ 10⁻³, the start of every PF-ODE likelihood here),
// where the diffused mixture is still a Gaussian mixture in closed form.
func MixtureBPD(g *mixture.Gaussian, n int) (mean, se float64, err error) {
	set, err := Load(Test)
	if err != nil {
		return 0, 0, err
	}
	x, err := set.Dequantized(0, n, 2)
	if err != nil {
		return 0, 0, err
	}
	s := Schedule()
	tMin, _ := s.Interval()
	co, err := schedule.At(s, tMin)
	if err != nil {
		return 0, 0, err
	}
	res, err := g.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb})
	if err != nil {
		return 0, 0, err
	}
	bpd, err := likelihood.BitsPerDim(res.LogProb, Dim, &Quant)
	if err != nil {
		return 0, 0, err
	}
	mean, se = meanSE(bpd)
	return mean, se, nil
}
