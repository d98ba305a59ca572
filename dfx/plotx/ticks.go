package plotx

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// minTicks is the fewest labelled ticks the tickers of this package put on
// an axis: a reader needs more than one or two labels to read a scale.
const minTicks = 4

// Ticks is a linear ticker that labels at least minTicks values inside the
// axis range, at steps of 1, 2, 2.5 or 5 × 10^k, with an unlabelled minor
// tick half-way between labels.
type Ticks struct{}

var _ plot.Ticker = Ticks{}

// Ticks implements plot.Ticker.
func (Ticks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return []plot.Tick{{Value: lo, Label: formatTick(lo, 1)}}
	}
	step := niceStep(lo, hi, minTicks)
	var ts []plot.Tick
	first := math.Ceil(lo/step - 1e-9)
	for k := first; k*step <= hi+1e-9*step; k++ {
		v := k * step
		if math.Abs(v) < 1e-12*step {
			v = 0
		}
		ts = append(ts, plot.Tick{Value: v, Label: formatTick(v, step)})
		if m := v + step/2; m < hi {
			ts = append(ts, plot.Tick{Value: m})
		}
	}
	if first*step-step/2 > lo {
		ts = append(ts, plot.Tick{Value: first*step - step/2})
	}
	return ts
}

// niceStep is the largest step of 1, 2, 2.5 or 5 × 10^k that puts at least
// n multiples of itself in [lo, hi].
func niceStep(lo, hi float64, n int) float64 {
	p := math.Pow10(int(math.Floor(math.Log10(hi - lo))))
	for _, e := range []float64{p, p / 10, p / 100} {
		for _, m := range []float64{5, 2.5, 2, 1} {
			s := m * e
			if math.Floor(hi/s+1e-9)-math.Ceil(lo/s-1e-9)+1 >= float64(n) {
				return s
			}
		}
	}
	return p / 1000
}

// formatTick writes v with as many decimals as the step needs.
func formatTick(v, step float64) string {
	if v == 0 {
		return "0"
	}
	if math.Abs(v) >= 1e5 || math.Abs(step) < 1e-4 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	dec := 0
	for s := step; math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, math.Abs(s)) && dec < 10; s *= 10 {
		dec++
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// logTicks is a log-axis ticker that labels at least minTicks values inside
// the range and leaves no stretch of the axis unlabelled for more than a
// quarter of its length (log units, ends included): powers of ten when the
// range spans enough decades, then 1, 2, 5 × 10^k, then 1, 2, 3, 5 × 10^k,
// then 1, 1.5, 2, 3, 5, 7 × 10^k, then 1…9 × 10^k (the densest of these with minTicks labels
// when none meets the quarter), and a linear ticker on a range too narrow
// for those. Unlabelled ticks mark 1…9 × 10^k.
type logTicks struct{}

var _ plot.Ticker = logTicks{}

// logMaxGap is the longest unlabelled stretch logTicks allows, as a
// fraction of the axis (log units).
const logMaxGap = 0.25

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return Ticks{}.Ticks(lo, hi)
	}
	span := math.Log10(hi / lo)
	var dense []plot.Tick // the densest labelling with minTicks labels
	for _, mantissas := range [][]float64{{1}, {1, 2, 5}, {1, 2, 3, 5}, {1, 1.5, 2, 3, 5, 7}, {1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9}} {
		var ts []plot.Tick
		var labelled []float64
		for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
			p := math.Pow(10, e)
			for _, m := range []float64{1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9} {
				v := m * p
				if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
					continue
				}
				t := plot.Tick{Value: v}
				for _, lm := range mantissas {
					if m == lm {
						t.Label = strconv.FormatFloat(v, 'g', 4, 64)
						labelled = append(labelled, v)
					}
				}
				if t.Label != "" || m == math.Trunc(m) {
					ts = append(ts, t)
				}
			}
		}
		if len(labelled) < minTicks {
			continue
		}
		dense = ts
		gap, prev := 0.0, lo
		for _, v := range append(labelled, hi) {
			gap, prev = math.Max(gap, math.Log10(v/prev)), v
		}
		if gap <= logMaxGap*span {
			return ts
		}
	}
	if dense != nil {
		return dense
	}
	return Ticks{}.Ticks(lo, hi)
}

// isLog reports whether an axis scale is logarithmic (possibly inverted).
func isLog(s plot.Normalizer) bool {
	switch v := s.(type) {
	case plot.LogScale, *plot.LogScale:
		return true
	case plot.InvertedScale:
		return isLog(v.Normalizer)
	}
	return false
}

// Readable gives both axes of p tickers with at least minTicks labels
// (logTicks on a log scale, Ticks otherwise) and moves a legend with
// entries out of the data area (legendOutside). A log y axis's label goes
// to the axis's top end: gonum reserves room for a centred label at the
// arithmetic middle of the range, which on a log axis lies near the top,
// and shrinks the data area by up to the label's length. Call it after
// the axes' scales are set and every legend entry is added.
func Readable(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if isLog(a.Scale) {
			a.Tick.Marker = logTicks{}
		} else {
			a.Tick.Marker = Ticks{}
		}
	}
	if isLog(p.Y.Scale) && p.Y.Label.Position == draw.PosCenter {
		p.Y.Label.Position = draw.PosTop
	}
	legendOutside(p)
}

// labelCount is the number of labelled ticks a ticker gives on [lo, hi].
func labelCount(t plot.Ticker, lo, hi float64) int {
	n := 0
	for _, tk := range t.Ticks(lo, hi) {
		if tk.Label != "" && tk.Value >= lo-1e-12*math.Abs(lo) && tk.Value <= hi+1e-12*math.Abs(hi) {
			n++
		}
	}
	return n
}
