package access

import (
	"fmt"
	"maps"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/toys"
)

// Names of the trace methods: the exact mixture's and the learned ones
// (toys.MethodVJP, eq. nll_VJP; toys.MethodDFTM, eq. trace_appro;
// toys.MethodDFTMC, ours, centred).
const (
	MethodExact = "exact"
	MethodVJP   = toys.MethodVJP
	MethodDFTM  = toys.MethodDFTM
	MethodDFTMC = toys.MethodDFTMC
)

type evaluator struct {
	cfg  Config
	sch  schedule.Schedule
	mix  mixture.Mixture
	data *mat.Dense
	nets []Learned
}

// DrawQT draws b points x_t = α y + σ ε ~ q_t with y uniform over the rows
// of data, from the given seed.
func DrawQT(data *mat.Dense, s schedule.Schedule, t float64, b int, seed uint64) *mat.Dense {
	rng := toys.NewRNG(seed)
	n, d := data.Dims()
	a, sig := s.Alpha(t), s.Sigma(t)
	x := mat.NewDense(b, d, nil)
	for i := 0; i < b; i++ {
		y := data.RawRowView(rng.IntN(n))
		row := x.RawRowView(i)
		for j := range row {
			row[j] = a*y[j] + sig*rng.NormFloat64()
		}
	}
	return x
}

// seedAt mixes a seed with a time so that each time gets its own points.
func seedAt(seed uint64, t float64) uint64 {
	return seed*0x9e3779b97f4a7c15 ^ math.Float64bits(t)
}

// model returns the model of a method for the likelihood ODE: the exact
// mixture, or the score network with the method's trace.
func (ev *evaluator) model(method string) (score.Model, error) {
	if method == MethodExact {
		return score.Exact{Mixture: ev.mix}, nil
	}
	return ev.nets[0].Model(method)
}

// row measures the errors at time t; withNLL adds the likelihood columns.
func (ev *evaluator) row(t float64, withNLL bool) (Row, error) {
	row := Row{T: t, Sigma: ev.sch.Sigma(t), TraceErr: map[string]Stat{}, NLLErr: map[string]float64{}, SolverErr: map[string]float64{}}
	var exTr, scoreErr, tnetErr []float64
	trErr := map[string][]float64{}
	nNets := max(len(ev.nets), 1)
	_, d := ev.data.Dims()
	for k := 0; k < nNets; k++ {
		for _, seed := range ev.cfg.EvalSeeds {
			x := DrawQT(ev.data, ev.sch, t, ev.cfg.EvalPoints, seedAt(seed, t))
			ex, err := ev.mix.Eval(mixture.Query{At: ev.at(t), X: x, Want: mixture.Score | mixture.Trace | mixture.SecondMoment})
			if err != nil {
				return row, fmt.Errorf("toys: exact at t = %g: %w", t, err)
			}
			exTr = append(exTr, stats.Mean(ex.Trace))
			if len(ev.nets) == 0 {
				continue
			}
			n, c := ev.nets[k], ev.at(t)
			eps, err := n.Net().EpsAt(c, x)
			if err != nil {
				return row, fmt.Errorf("toys: score network: %w", err)
			}
			trs, err := n.Traces(c, x, MethodVJP, MethodDFTM, MethodDFTMC)
			if err != nil {
				return row, err
			}
			tnet, err := n.Net().TAt(c, x)
			if err != nil {
				return row, fmt.Errorf("toys: DF-TM network: %w", err)
			}
			for _, m := range []string{MethodDFTMC, MethodVJP, MethodDFTM} {
				trErr[m] = append(trErr[m], RelErr(trs[m], ex.Trace))
			}
			score.ScoreFromEps(eps, c, eps)
			scoreErr = append(scoreErr, RelL2(eps, ex.Score))
			for i := range tnet {
				tnet[i] *= float64(d)
			}
			tnetErr = append(tnetErr, RelErr(tnet, ex.SecondMoment))
		}
	}
	row.ExactTr = stat(exTr)
	for m, v := range trErr {
		row.TraceErr[m] = stat(v)
	}
	row.ScoreErr, row.TNetErr = stat(scoreErr), stat(tnetErr)
	if !withNLL {
		return row, nil
	}
	x := DrawQT(ev.data, ev.sch, t, ev.cfg.NLLPoints, seedAt(ev.cfg.EvalSeeds[0]+7919, t))
	ex, err := ev.mix.Eval(mixture.Query{At: ev.at(t), X: x, Want: mixture.LogProb})
	if err != nil {
		return row, err
	}
	row.ExactNLL = -stats.Mean(ex.LogProb)
	methods := []string{MethodExact}
	if len(ev.nets) > 0 {
		methods = append(methods, MethodVJP, MethodDFTM, MethodDFTMC)
	}
	for _, m := range methods {
		model, err := ev.model(m)
		if err != nil {
			return row, err
		}
		r, err := likelihood.LogProb(x, model, likelihood.Config{
			Schedule: ev.sch, T0: t, Steps: ev.cfg.NLLSteps, Solver: ev.cfg.NLLSolver, EstimateError: true,
		})
		if err != nil {
			return row, fmt.Errorf("toys: NLL of %s at t = %g: %w", m, t, err)
		}
		row.NLLErr[m] = RelErr(r.LogProb, ex.LogProb)
		row.SolverErr[m] = stats.Mean(r.SolverError)
	}
	return row, nil
}

// RelErr is the relative error Σ|est − ref| / Σ|ref| (robust where ref
// crosses zero, as tr F does between modes).
func RelErr(est, ref []float64) float64 {
	num, den := 0.0, 0.0
	for i := range ref {
		num += math.Abs(est[i] - ref[i])
		den += math.Abs(ref[i])
	}
	return num / den
}

// RelL2 is ‖est − ref‖_F / ‖ref‖_F.
func RelL2(est, ref *mat.Dense) float64 {
	var diff mat.Dense
	diff.Sub(est, ref)
	return mat.Norm(&diff, 2) / mat.Norm(ref, 2)
}

// stat is the mean and sample standard deviation of v over seeds; with one
// seed the spread is 0 (errCell then shows the mean alone).
func stat(v []float64) Stat {
	m, sd := stats.MeanSD(v)
	if len(v) == 1 {
		sd = 0
	}
	return Stat{m, sd}
}

// HeatField holds the normalised trace fields σ² tr F / d of each method on
// a grid at one time: 1 where the posterior is a point, below 1 (negative
// between modes) where it spreads.
type HeatField struct {
	T      float64
	Xs, Ys []float64
	Fields map[string][][]float64 // method → z[iy][ix]
}

func (ev *evaluator) heatFields() ([]HeatField, error) {
	g, e := ev.cfg.HeatGrid, ev.cfg.HeatExtent
	axis := make([]float64, g)
	for i := range axis {
		axis[i] = -e + 2*e*float64(i)/float64(g-1)
	}
	x := mat.NewDense(g*g, 2, nil)
	for iy, y := range axis {
		for ix, xv := range axis {
			x.Set(iy*g+ix, 0, xv)
			x.Set(iy*g+ix, 1, y)
		}
	}
	var out []HeatField
	lo, hi := ev.sch.Interval()
	for _, t := range ev.cfg.HeatTimes {
		t = clampTime(t, lo, hi)
		s2 := ev.sch.Sigma(t) * ev.sch.Sigma(t)
		traces := map[string][]float64{}
		ex, err := ev.mix.Eval(mixture.Query{At: ev.at(t), X: x, Want: mixture.Trace})
		if err != nil {
			return nil, err
		}
		traces[MethodExact] = ex.Trace
		if len(ev.nets) > 0 {
			learned, err := ev.nets[0].Traces(ev.at(t), x, MethodVJP, MethodDFTM, MethodDFTMC)
			if err != nil {
				return nil, err
			}
			maps.Copy(traces, learned)
		}
		hf := HeatField{T: t, Xs: axis, Ys: axis, Fields: map[string][][]float64{}}
		for m, tr := range traces {
			z := make([][]float64, g)
			for iy := range z {
				z[iy] = make([]float64, g)
				for ix := range z[iy] {
					z[iy][ix] = s2 * tr[iy*g+ix] / 2
				}
			}
			hf.Fields[m] = z
		}
		out = append(out, hf)
	}
	return out, nil
}

// Timing is the measured cost of one trace method at d = 2.
type Timing struct {
	Method   string
	Batch    int
	PerQuery time.Duration
}

func (ev *evaluator) timing() ([]Timing, error) {
	const t = 0.5
	x := DrawQT(ev.data, ev.sch, t, ev.cfg.TimingBatch, 4242)
	fns := []struct {
		name string
		fn   func() error
	}{{MethodExact + fmt.Sprintf(" (N = %d)", ev.cfg.N), func() error {
		_, err := ev.mix.Eval(mixture.Query{At: ev.at(t), X: x, Want: mixture.Trace})
		return err
	}}}
	if len(ev.nets) > 0 {
		n := ev.nets[0]
		fns = append(fns,
			struct {
				name string
				fn   func() error
			}{"score network forward (ε̂ only)", func() error { _, err := n.Net().EpsAt(ev.at(t), x); return err }},
			struct {
				name string
				fn   func() error
			}{MethodVJP + " (d VJPs, access.VJPTrace)", ev.traceOf(n, MethodVJP, x)},
			struct {
				name string
				fn   func() error
			}{MethodDFTM + " (ε̂ and t_θ forward, access.DFTM)", ev.traceOf(n, MethodDFTM, x)},
			struct {
				name string
				fn   func() error
			}{MethodDFTMC + " (ours; ν_θ forward, access.DFTMCentred)", ev.traceOf(n, MethodDFTMC, x)})
	}
	var out []Timing
	for _, f := range fns {
		if err := f.fn(); err != nil { // warm-up (and JIT compilation)
			return nil, err
		}
		reps, start := 0, time.Now()
		for time.Since(start) < 300*time.Millisecond || reps < 3 {
			if err := f.fn(); err != nil {
				return nil, err
			}
			reps++
		}
		per := time.Since(start) / time.Duration(reps*ev.cfg.TimingBatch)
		out = append(out, Timing{Method: f.name, Batch: ev.cfg.TimingBatch, PerQuery: per})
	}
	return out, nil
}

// traceOf is a function that runs n's trace of method at x, t = 0.5 (the
// timing's time).
func (ev *evaluator) traceOf(n Learned, method string, x *mat.Dense) func() error {
	return func() error {
		est, err := n.Trace(method)
		if err == nil {
			_, err = est.Trace(ev.at(0.5), x)
		}
		return err
	}
}

// at is the schedule's coefficients at t, a time the evaluator has already
// clamped into the schedule's interval (zero coefficients, which the mixture
// rejects, otherwise).
func (ev *evaluator) at(t float64) schedule.Coefficients {
	c, _ := schedule.At(ev.sch, t)
	return c
}
