package toys

import (
	"context"

	"github.com/dfx-lab/dfx/dfx/report"
)

// DensityFor is DensityQuick or DensityFull.
func DensityFor(p report.Profile) DensityConfig {
	if p == report.Quick {
		return DensityQuick()
	}
	return DensityFull()
}

func init() {
	report.RegisterLegacy(report.Legacy{
		Name: "density", Doc: "density guidance on analytic Gaussian mixtures: quantile and offset targets, exact and learned traces",
		Run: func(ctx context.Context, c report.Config) ([]report.Result, error) {
			return report.One(RunDensity(ctx, DensityFor(c.Profile)))
		},
	})
}
