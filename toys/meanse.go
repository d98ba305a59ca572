package toys

import (
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/stats"
)

// MeanSE is a mean and its standard error over seeds.
type MeanSE struct{ Mean, SE float64 }

func meanSE(v []float64) MeanSE {
	m, se := stats.MeanSE(v)
	return MeanSE{m, se}
}

// seCell is a mean ± standard error over seeds.
func seCell(s MeanSE) report.Cell { return report.FloatSE(s.Mean, s.SE) }
