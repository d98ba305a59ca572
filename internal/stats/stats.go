// Package stats holds the summary statistics the experiments report,
// written once.
package stats

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// MeanSE is the mean of v and its standard error √(s²/n), s² the unbiased
// sample variance (gonum's stat.MeanVariance: the mean is floats.Sum/n, the
// variance the corrected two-pass sum). The mean of no values is NaN; the
// standard error of fewer than two values is NaN (undefined, not 0).
func MeanSE(v []float64) (mean, se float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	if len(v) < 2 {
		return v[0], math.NaN()
	}
	mean, variance := stat.MeanVariance(v, nil)
	return mean, math.Sqrt(variance / float64(len(v)))
}

// MeanSD is the mean of v and its sample standard deviation s, s² the
// unbiased sample variance: the spread of the values, where MeanSE gives
// the uncertainty of their mean. NaN as in MeanSE (no values; fewer than
// two for s). The mean is Mean's, summed in index order, so the toys'
// committed tables keep their bits (gonum's stat.MeanStdDev sums with an
// unrolled kernel whose last bits differ).
func MeanSD(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	mean = Mean(v)
	if len(v) < 2 {
		return mean, math.NaN()
	}
	n := float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / (n - 1))
}

// Mean is Σ v_i / n with the sum taken in index order, as RelNorm's (NaN
// for no values). Where the last bits do not matter, stat.Mean is the same
// mean summed by gonum's unrolled kernel.
func Mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Median is the middle value of v, the mean of the two middle values for
// an even count (0 for no values); v is not modified. gonum has no such
// median: stat.Quantile(0.5, …) is the lower middle value for an even count,
// and NaN whenever v holds a NaN, where this sorts NaNs first (slices.Sort).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Ranks are the 1-based ranks of v's values, ties given the mean of the
// ranks they span (the ranks Spearman's ρ correlates).
func Ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// Spearman is the rank correlation ρ of a and b (same length): Pearson's
// correlation (gonum's stat.Correlation) of their Ranks. The ranks are
// multiples of ½, so their means and deviations are exact and ρ has the
// bits of the plain two-pass formula.
func Spearman(a, b []float64) float64 {
	return stat.Correlation(Ranks(a), Ranks(b), nil)
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

// NearestDistance is min_i ‖x_q − y_i‖ for each row x_q of x [B, d], over
// the rows y_i of y [N, d]: by ‖x‖² − 2 x·y + ‖y‖² with one matrix product.
// ‖y_i‖² is summed in index order (not floats.Dot), so that distances
// committed in figures reproduce to the bit.
func NearestDistance(y, x *mat.Dense) []float64 {
	nq, _ := x.Dims()
	ny, _ := y.Dims()
	g := mat.NewDense(nq, ny, nil)
	g.Mul(x, y.T())
	out := make([]float64, nq)
	for q := range nq {
		xn := mat.Dot(x.RowView(q), x.RowView(q))
		best := math.Inf(1)
		row := g.RawRowView(q)
		for i := range ny {
			var yn float64
			for _, v := range y.RawRowView(i) {
				yn += v * v
			}
			best = math.Min(best, xn-2*row[i]+yn)
		}
		out[q] = math.Sqrt(math.Max(best, 0))
	}
	return out
}
