package likelihood

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/problem"
)

// TruthRow summarises the estimators against the exact Fisher of the
// training set's Dirac mixture (MNIST: 60 000 images) at one time, for queries whose x₀ comes from
// one split (train: the mixture's own atoms; test: unseen images).
type TruthRow struct {
	Split        string
	T, Sigma     float64
	Queries      int
	ExactTrace   float64            // mean exact tr F
	RelErr       map[string]float64 // mean |est − exact| / |exact| per estimator
	Delta1       float64            // mean |t_θ − t*|, t* = E[‖x₀‖² | x_t]/d (exact)
	Delta2Rel    float64            // mean ‖ȳ_θ − ȳ‖ / ‖ȳ‖
	BoundHolds   float64            // fraction of queries with |DF-TM − exact| ≤ DFTMErrorBound
	BoundRatio   float64            // median of |DF-TM − exact| / bound
	ExactCov     float64            // mean tr Cov[x₀|x_t]/d of the empirical mixture
	NetCov       float64            // mean (t_θ − ‖ȳ_θ‖²/d), the network's implied tr Cov/d
	NearestShare float64            // mean posterior weight of the most probable training image
}

// TruthResult is the exact-Fisher study at image scale.
type TruthResult struct {
	Problem     string // the problem's name
	TrainPoints int    // atoms of the reference mixture
	Estimators  []string
	Rows        []TruthRow
}

// Truth is the study's exact-Fisher part alone, on p's data and the
// networks of the folder nets (p.Networks; they need t_θ and ν_θ): every
// trace estimator, t_θ and ȳ_θ against the exact Fisher of the Dirac
// mixture p.Exact at cfg.TruthTimes, cfg.TruthQueries queries noised from
// training and from test rows. It is how the study runs on any problem,
// e.g. a researcher's data and imported network (onnximport.NewProblem).
func Truth(ctx context.Context, p *problem.Problem, nets string, cfg Config) (*TruthResult, error) {
	nw, err := p.Networks(ctx, nets)
	if err != nil {
		return nil, err
	}
	train, err := p.Train(ctx)
	if err != nil {
		return nil, err
	}
	if p.Test == nil {
		return nil, fmt.Errorf("likelihood: problem %s has no test points", p.Name)
	}
	test, err := p.Test(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := test.Dims(); n < cfg.TruthQueries {
		return nil, fmt.Errorf("likelihood: %d test points, the exact-Fisher part queries %d", n, cfg.TruthQueries)
	}
	return study{p: p, nets: nw, cfg: cfg, log: io.Discard}.truth(ctx, train, test)
}

// truth scores every trace estimator, t_θ and ȳ_θ against the exact
// reference (the Dirac mixture of the training rows y [N, d]) at
// x_t = α x₀ + σ ε, x₀ from y or from the test rows.
func (s study) truth(ctx context.Context, y, test *mat.Dense) (*TruthResult, error) {
	mix, err := s.p.Exact(ctx)
	if err != nil {
		return nil, err
	}
	n, cfg, d := s.nets.Net, s.cfg, s.p.Dim
	tr, err := newTraces(n, d, cfg.Seed)
	if err != nil {
		return nil, err
	}
	ests := []score.TraceEstimator{tr.vjp, tr.h16, tr.dftm}
	if tr.dftmc != nil {
		ests = append(ests, tr.dftmc)
	}
	res := &TruthResult{Problem: s.p.Name}
	res.TrainPoints, _ = y.Dims()
	for _, e := range ests {
		res.Estimators = append(res.Estimators, e.Name())
	}
	q := cfg.TruthQueries
	rng := rand.New(rand.NewPCG(cfg.Seed, 77))
	ny, _ := y.Dims()
	idx := rng.Perm(ny)[:q]
	fromTrain := mat.NewDense(q, d, nil)
	for i, k := range idx {
		fromTrain.SetRow(i, y.RawRowView(k))
	}
	splits := []struct {
		name string
		x0   *mat.Dense
	}{{"train", fromTrain}, {"test", mat.DenseCopyOf(test.Slice(0, q, 0, d))}}
	for _, sp := range splits {
		for _, t := range cfg.TruthTimes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			row, err := s.truthRow(mix, y, sp.x0, sp.name, t, ests, tr.dftm, rng)
			if err != nil {
				return nil, err
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res, nil
}

// truthRow is the row of split at time t: queries noised from x0 [q, d]
// with rng.
func (s study) truthRow(mix mixture.Mixture, y, x0 *mat.Dense, split string, t float64, ests []score.TraceEstimator, dftm score.TraceEstimator,
	rng *rand.Rand) (TruthRow, error) {
	n := s.nets.Net
	q, d := x0.Dims()
	c, err := schedule.At(n.Schedule, t)
	if err != nil {
		return TruthRow{}, err
	}
	x := mat.NewDense(q, d, nil)
	for i := range q {
		for j := range d {
			x.Set(i, j, c.Alpha*x0.At(i, j)+c.Sigma*rng.NormFloat64())
		}
	}
	ex, err := mix.Eval(mixture.Query{At: c, X: x, Want: mixture.Trace | mixture.Denoiser | mixture.SecondMoment | mixture.LogProb})
	if err != nil {
		return TruthRow{}, err
	}
	row := TruthRow{Split: split, T: t, Sigma: c.Sigma, Queries: q, RelErr: map[string]float64{}}
	for i := range q {
		row.ExactTrace += ex.Trace[i] / float64(q)
	}
	for _, e := range ests {
		got, err := e.Trace(c, x)
		if err != nil {
			return TruthRow{}, err
		}
		for i := range q {
			row.RelErr[e.Name()] += math.Abs(got[i]-ex.Trace[i]) / math.Abs(ex.Trace[i]) / float64(q)
		}
	}
	return row, dftmBound(&row, n, dftm, y, x, c, ex)
}

// nearestShare is, for each query, the posterior weight of the most
// probable atom of the Dirac mixture y at coefficients c: 1 means the
// empirical posterior has collapsed onto one training image.
func nearestShare(y, x *mat.Dense, c schedule.Coefficients) ([]float64, error) {
	nq, d := x.Dims()
	ny, _ := y.Dims()
	// ‖x − α y_i‖² = ‖x‖² − 2α⟨x, y_i⟩ + α²‖y_i‖²: one product [nq, ny].
	g := mat.NewDense(nq, ny, nil)
	g.Mul(x, y.T())
	yn := make([]float64, ny)
	for i := range ny {
		r := y.RawRowView(i)
		for _, v := range r {
			yn[i] += v * v
		}
	}
	out := make([]float64, nq)
	s2 := 2 * c.Sigma * c.Sigma
	for q := range nq {
		row := g.RawRowView(q)
		best := math.Inf(-1)
		logits := make([]float64, ny)
		for i := range ny {
			logits[i] = -(c.Alpha*c.Alpha*yn[i] - 2*c.Alpha*row[i]) / s2 // ‖x‖² cancels
			best = math.Max(best, logits[i])
		}
		var z float64
		for _, l := range logits {
			z += math.Exp(l - best)
		}
		out[q] = 1 / z
	}
	_ = d
	return out, nil
}

// dftmBound fills row's DF-TM columns at the queries x (coefficients c):
// the network's errors δ₁ = |t_θ − t*| and δ₂ = ‖ȳ_θ − ȳ‖ against the
// exact mixture answer ex, the share of queries within the corrected bound
// (access.DFTMErrorBound) and the median ratio to it, the exact and the
// network's posterior variances, and the nearest training image's share.
func dftmBound(row *TruthRow, n *access.Net, dftm score.TraceEstimator, y, x *mat.Dense, c schedule.Coefficients, ex *mixture.Result) error {
	q, _ := x.Dims()
	tt, err := n.TAt(c, x)
	if err != nil {
		return err
	}
	yb, err := n.DenoiserAt(c, x)
	if err != nil {
		return err
	}
	dtm, err := dftm.Trace(c, x)
	if err != nil {
		return err
	}
	nearest, err := nearestShare(y, x, c)
	if err != nil {
		return err
	}
	var ratios []float64
	_, d := x.Dims()
	dim := float64(d)
	for i := range q {
		tStar := ex.SecondMoment[i] / dim
		yEx, yNet := ex.Denoiser.RawRowView(i), yb.RawRowView(i)
		var dn, yn, ynet float64
		for j := range d {
			dn += (yNet[j] - yEx[j]) * (yNet[j] - yEx[j])
			yn += yEx[j] * yEx[j]
			ynet += yNet[j] * yNet[j]
		}
		d1, d2 := math.Abs(tt[i]-tStar), math.Sqrt(dn)
		row.Delta1 += d1 / float64(q)
		row.Delta2Rel += d2 / math.Sqrt(yn) / float64(q)
		bound := access.DFTMErrorBound(d, c.Alpha, c.Sigma, d1, d2, math.Sqrt(yn))
		diff := math.Abs(dtm[i] - ex.Trace[i])
		// float32 network outputs: allow rounding of d/σ² in the comparison
		if diff <= bound*(1+1e-3)+1e-5*dim/(c.Sigma*c.Sigma) {
			row.BoundHolds += 1 / float64(q)
		}
		ratios = append(ratios, diff/bound)
		row.ExactCov += (tStar - yn/dim) / float64(q)
		row.NetCov += (tt[i] - ynet/dim) / float64(q)
		row.NearestShare += nearest[i] / float64(q)
	}
	row.BoundRatio = stats.Median(ratios)
	return nil
}
