// Package stats holds the summary statistics the experiments report,
// written once.
package stats

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// MeanSE is the mean of v and its standard error √(s²/n), s² the unbiased
// sample variance. The mean of no values is NaN; the standard error of
// fewer than two values is NaN (undefined, not 0).
func MeanSE(v []float64) (mean, se float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	n := float64(len(v))
	mean = floats.Sum(v) / n
	if len(v) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}

// MeanSD is the mean of v and its sample standard deviation s, s² the
// unbiased sample variance: the spread of the values, where MeanSE gives
// the uncertainty of their mean. NaN as in MeanSE (no values; fewer than
// two for s). The sums are taken in index order (as RelNorm's), so the
// toys' committed tables keep their bits; MeanSE's mean is floats.Sum's.
func MeanSD(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	n := float64(len(v))
	for _, x := range v {
		mean += x
	}
	mean /= n
	if len(v) < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1))
}

// Estimate is a mean with its standard error (MeanSE), as a value.
type Estimate struct{ Mean, SE float64 }

// EstimateOf is MeanSE(v) as an Estimate.
func EstimateOf(v []float64) Estimate {
	m, se := MeanSE(v)
	return Estimate{m, se}
}

// LogSumExp is log Σ exp(v_i), computed stably (−Inf for an empty v or
// all −Inf).
func LogSumExp(v []float64) float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = math.Max(mx, x)
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - mx)
	}
	return mx + math.Log(s)
}

// RelNorm is the relative Euclidean error ‖a − b‖/‖b‖ of a against the
// reference b (same length), the sums taken in index order.
func RelNorm(a, b []float64) float64 {
	var num, den float64
	for i := range b {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / den)
}
