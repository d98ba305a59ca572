package adjoint

import (
	"context"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
)

// ExactConfig sizes the exact-operator study on a problem's training set:
// the empirical training distribution is a Dirac mixture, so its Fisher, its
// denoiser and the whole guided sampler are exact, and every approximate
// operator can be scored against them at the data's scale.
type ExactConfig struct {
	Seeds      int    // guided samples (one batch)
	Guided     int    // guided steps, ending at GuidanceConfig.WindowEnd
	ProbeEvery int    // Hilbert–Schmidt errors at every ProbeEvery-th guided step (d×d matrices: costly)
	Reward     string // the loss of the study
	Atoms      int    // training rows in the mixture (0: all)
}

// The operators of the study, by the names of its tables.
const (
	StudyExact    = "exact"              // exact model (Dirac mixture) and exact F v
	StudyVJP      = "vjp"                // the ε-network and VJP through it
	StudyEANet    = "df-ea (network ȳ)"  // the ε-network and DF-EA
	StudyEAExact  = "df-ea (exact ȳ)"    // the exact model and DF-EA: the endpoint approximation alone
	StudyUnguided = "unguided (network)" // the ε-network, no guidance
	StudyUngExact = "unguided (exact)"   // the Dirac mixture, no guidance (samples are training images)
)

// GradAgreement is one approximate λ_t against the exact one at one guided
// step (the states of the exact guided sampler), over the seeds.
type GradAgreement struct {
	Step             int
	T                float64
	Method           string
	Cos, CosSE       float64
	RelErr, RelErrSE float64
}

// HSRow is ‖F − F_op‖_HS at the guided state x_t (rows of the exact guided
// sampler), with its bound where the paper gives one.
type HSRow struct {
	Step     int
	T        float64
	Method   string
	HS       float64 // mean over rows (seeds) of ‖F − F_op‖_HS
	HSSE     float64 // its standard error over the rows
	FisherHS float64 // mean ‖F‖_HS, for scale
	Bound    float64 // mean of the corrected Prop. error_bound_ea bound (NaN: none)
	Within   float64 // fraction of rows with HS ≤ bound (NaN: no bound)
	Delta    float64 // mean ‖ȳ_op − ȳ‖ (the δ of the bound)
}

// StudyRun is one sampler of the study run to the end.
type StudyRun struct {
	Method      string
	Mean, SE    float64 // reward of the clipped samples
	PerSample   float64 // seconds
	NearestDist float64 // mean distance of the samples to the nearest training image
	Images      *mat.Dense
}

// ExactStudy is the exact-operator study of RunGuidance (GuidanceResult.Exact).
type ExactStudy struct {
	Config   ExactConfig
	Atoms    int
	Strength float64
	D        float64 // max ‖y_i‖ over the atoms (the D_y of the bound, before x̂₀)
	Grad     []GradAgreement
	HS       []HSRow
	Runs     []StudyRun
}

// runExactStudy runs the guided sampler three ways on the Dirac mixture of
// the training set — exact model and operator, the network with VJP, the
// network with DF-EA — plus DF-EA with the exact denoiser (the endpoint
// approximation alone). Along the exact sampler's window it scores each
// approximate λ_t = ∂L(x̂₀(x_t))/∂x_t against the exact one, and at every
// ProbeEvery-th guided step it measures ‖F − F_op‖_HS against the exact
// Fisher (d×d, from mixture.Full) and the corrected bound of Prop.
// error_bound_ea, (α²/σ⁴)(2D² + δ(‖ȳ‖ + ‖ȳ_θ‖)) with D = max(max_i ‖y_i‖,
// ‖x̂₀‖) and δ = ‖ȳ_θ − ȳ‖ (the paper's α²/σ³ bounds σ(F − F_EA)).
func (gd *guidance) runExactStudy(ctx context.Context, strength float64) (*ExactStudy, error) {
	cfg, log := gd.cfg, gd.log
	ec := cfg.Exact
	if ec.Seeds < 1 || ec.Guided < 1 || ec.Guided > cfg.WindowEnd || ec.ProbeEvery < 1 {
		return nil, fmt.Errorf("adjoint: exact study needs Seeds, Guided ≥ 1 (≤ WindowEnd) and ProbeEvery ≥ 1: %+v", ec)
	}
	y, mix, err := gd.studyData(ctx, ec.Atoms)
	if err != nil {
		return nil, err
	}
	atoms, _ := y.Dims()
	st := &ExactStudy{Config: ec, Atoms: atoms, Strength: strength}
	for i := range atoms {
		st.D = math.Max(st.D, floats.Norm(y.RawRowView(i), 2))
	}
	loss, err := gd.rw.Loss(ec.Reward, ec.Seeds)
	if err != nil {
		return nil, err
	}
	vjp, err := gd.operator(OperatorVJP)
	if err != nil {
		return nil, err
	}
	guides := operatorGuides(gd.p.Schedule, mix, gd.net, vjp, loss, studyNames)
	approx := []string{StudyVJP, StudyEANet, StudyEAExact}
	from := cfg.WindowEnd - ec.Guided
	x0 := gd.p.InitialNoise(cfg.Seed+1000, 0, ec.Seeds) // seeds apart from the curves'
	ac := dfxadjoint.Config{Steps: cfg.Steps, From: from, To: cfg.WindowEnd, InnerSteps: cfg.InnerSteps, Strength: strength, Normalize: true}

	// The exact guided sampler, observed at each guided step.
	obs := ac
	obs.Observe = func(k int, at schedule.Coefficients, x *mat.Dense, exact *dfxadjoint.GradientResult) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		grads := map[string]*dfxadjoint.GradientResult{}
		for _, m := range approx {
			g, err := guides[m].Gradient(x, at.T, cfg.InnerSteps)
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			grads[m] = g
			st.Grad = append(st.Grad, agreement(k, at.T, m, g.Grad, exact.Grad))
		}
		if (k-from)%ec.ProbeEvery == 0 {
			rows, err := st.hsErrors(k, at, x, mix, grads, gd)
			if err != nil {
				return err
			}
			st.HS = append(st.HS, rows...)
			fmt.Fprintf(log, "adjoint: exact study step %d (t = %.3f): cos vjp %.3f, df-ea %.3f, df-ea exact ȳ %.3f\n", k, at.T,
				st.Grad[len(st.Grad)-3].Cos, st.Grad[len(st.Grad)-2].Cos, st.Grad[len(st.Grad)-1].Cos)
		}
		return nil
	}
	run := func(method string, g dfxadjoint.Guide, c dfxadjoint.Config) error {
		return st.sample(ctx, gd, y, x0, method, g, c)
	}
	if err := run(StudyExact, guides[StudyExact], obs); err != nil {
		return nil, err
	}
	for _, m := range approx {
		if err := run(m, guides[m], ac); err != nil {
			return nil, err
		}
	}
	if err := run(StudyUngExact, dfxadjoint.Guide{Schedule: gd.p.Schedule, Model: guides[StudyExact].Model}, ac); err != nil {
		return nil, err
	}
	if err := run(StudyUnguided, dfxadjoint.Guide{Schedule: gd.p.Schedule, Model: guides[StudyVJP].Model}, ac); err != nil {
		return nil, err
	}
	return st, nil
}

// sample runs one sampler of the study to completion from x0 (unguided
// when g has no operator) and appends its reward (mean ± SE), time per
// sample and distance to the nearest of the data y to st.Runs.
func (st *ExactStudy) sample(ctx context.Context, gd *guidance, y, x0 *mat.Dense, method string, g dfxadjoint.Guide, c dfxadjoint.Config) error {
	if g.Operator == nil {
		c.From = c.To
	}
	t := time.Now()
	res, err := g.Sample(ctx, x0, c)
	if err != nil {
		return fmt.Errorf("%s sampler: %w", method, err)
	}
	r, err := gd.rewards(st.Config.Reward, res.X)
	if err != nil {
		return err
	}
	m, sd := stat.MeanStdDev(r, nil)
	nd := stat.Mean(stats.NearestDistance(y, gd.clip(res.X)), nil)
	st.Runs = append(st.Runs, StudyRun{Method: method, Mean: m, SE: sd / math.Sqrt(float64(len(r))),
		PerSample: time.Since(t).Seconds() / float64(st.Config.Seeds), NearestDist: nd, Images: res.X})
	fmt.Fprintf(gd.log, "adjoint: exact study %s: reward %.4g ± %.2g\n", method, m, sd/math.Sqrt(float64(len(r))))
	return nil
}

// studyData is the exact study's data: the first atoms training rows of
// the problem (all for atoms ≤ 0) and their Dirac mixture.
func (gd *guidance) studyData(ctx context.Context, atoms int) (*mat.Dense, *mixture.Dirac, error) {
	if gd.p.Train == nil {
		return nil, nil, fmt.Errorf("problem %s has no training data", gd.p.Name)
	}
	train, err := gd.p.Train(ctx)
	if err != nil {
		return nil, nil, err
	}
	n, d := train.Dims()
	if atoms <= 0 || atoms > n {
		atoms = n
	}
	y := mat.DenseCopyOf(train.Slice(0, atoms, 0, d))
	mix, err := mixture.NewDirac(y, nil)
	return y, mix, err
}

// agreement scores λ against the exact λ* row by row: cosine and
// ‖λ − λ*‖/‖λ*‖, means and standard errors over rows.
func agreement(k int, t float64, method string, got, want *mat.Dense) GradAgreement {
	b, _ := got.Dims()
	cos, rel := make([]float64, b), make([]float64, b)
	for i := range b {
		g, w := got.RawRowView(i), want.RawRowView(i)
		cos[i] = cosine(g, w)
		rel[i] = floats.Distance(g, w, 2) / floats.Norm(w, 2)
	}
	a := GradAgreement{Step: k, T: t, Method: method}
	a.Cos, a.CosSE = stats.MeanSE(cos)
	a.RelErr, a.RelErrSE = stats.MeanSE(rel)
	return a
}

// hsErrors measures ‖F − F_op‖_HS at the states x (time at) for the two
// DF-EA variants (F_EA = I/σ² − (α²/σ⁴)(x̂₀x̂₀ᵀ − ȳȳᵀ) with each one's
// endpoint and denoiser at x) and for VJP (its d×d matrix from d products
// per row), with F the mixture's exact Fisher.
func (st *ExactStudy) hsErrors(k int, at schedule.Coefficients, x *mat.Dense, mix *mixture.Dirac, grads map[string]*dfxadjoint.GradientResult,
	gd *guidance) ([]HSRow, error) {
	b, d := x.Dims()
	ex, err := mix.Eval(mixture.Query{At: at, X: x, Want: mixture.Full | mixture.Denoiser})
	if err != nil {
		return nil, err
	}
	vjp, err := gd.operator(OperatorVJP)
	if err != nil {
		return nil, err
	}
	fisherHS := make([]float64, b)
	for i, f := range ex.Fisher {
		fisherHS[i] = mat.Norm(f, 2)
	}
	var out []HSRow
	for _, m := range []string{StudyEANet, StudyEAExact, StudyVJP} {
		row := HSRow{Step: k, T: at.T, Method: m, Bound: math.NaN(), Within: math.NaN()}
		var within float64
		hs := make([]float64, b)
		for i := range b {
			f := ex.Fisher[i]
			yb := ex.Denoiser.RawRowView(i)
			diff := mat.NewDense(d, d, nil)
			switch m {
			case StudyVJP:
				// Row j of jm is (F_op e_j)ᵀ, so jm is F_opᵀ; F is symmetric,
				// so ‖F − jm‖_HS = ‖F − F_op‖_HS, the operator as the adjoint
				// uses it (not symmetrised).
				jm, err := access.OperatorMatrix(vjp, score.State{At: at, X: x.Slice(i, i+1, 0, d).(*mat.Dense)})
				if err != nil {
					return nil, err
				}
				diff.Sub(f, jm[0])
			default:
				tr := grads[m].Trajectory
				xh, yo := tr.Endpoint().RawRowView(i), tr.Denoisers[0].RawRowView(i)
				diff.Sub(f, access.DFEAMatrix(at, xh, yo))
				dmax := math.Max(st.D, floats.Norm(xh, 2))
				delta := floats.Distance(yo, yb, 2)
				bound := access.DFEAErrorBound(at, dmax, delta, floats.Norm(yb, 2), floats.Norm(yo, 2))
				if i == 0 {
					row.Bound, row.Within = 0, 0
				}
				row.Bound += bound / float64(b)
				row.Delta += delta / float64(b)
				if mat.Norm(diff, 2) <= bound*(1+1e-9) {
					within++
				}
			}
			hs[i] = mat.Norm(diff, 2)
			row.FisherHS += fisherHS[i] / float64(b)
		}
		row.HS, row.HSSE = stats.MeanSE(hs)
		if !math.IsNaN(row.Within) {
			row.Within = within / float64(b)
		}
		out = append(out, row)
	}
	return out, nil
}
