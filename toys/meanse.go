package toys

import (
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/stats"
)

// MeanSE is a mean and its standard error over seeds (stats.EstimateOf).
type MeanSE = stats.Estimate

// seCell is a mean ± standard error over seeds.
func seCell(s MeanSE) report.Cell { return report.FloatSE(s.Mean, s.SE) }
