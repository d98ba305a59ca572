package mnist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// ValPoint is one validation of an ε-network during training.
type ValPoint struct {
	Step    int64
	Seconds float64 // training time when measured (summed over resumed runs)
	// BPD and SE are the validation bpd (ValidationBPD: a PF-ODE solve,
	// measured at the first and the last step only) and its standard error
	// over the images; 0 when not measured.
	BPD, SE float64 `json:",omitempty"`
	// ELBO is the ELBO validation (ValidationELBO), measured at every
	// validation.
	ELBO *ELBOVal `json:",omitempty"`
}

// The validation protocol: the first valImages test images, dequantised
// with seed 3, the EMA network's unconditional PF-ODE likelihood from
// t_min by dopri5 (relative tolerance valRTol) with a Hutchinson trace of
// valProbes Rademacher probes (the same probes at every evaluation). It is
// a cheap, fixed yardstick to compare runs and follow convergence, not the
// test bpd of the results. The near-t_min dynamics of an image-scale
// mixture are stiff: on the skip mixture alone (8 images, exact trace and
// exact log q = 3.728 bpd), dopri5 at 10⁻³ gave 3.718 (200 evaluations) and
// at 10⁻⁴ 3.728 (290), where Heun with 20 steps uniform in t gave −104 and
// with 100 steps uniform in log σ 3.643.
const (
	valImages = 16
	valRTol   = 1e-3
	valProbes = 4
)

// ValidationProtocol describes ValidationBPD in words.
func ValidationProtocol() string {
	return fmt.Sprintf("%d dequantised test images, dopri5 rtol %g from t_min, Hutchinson-%d trace, EMA weights", valImages, valRTol, valProbes)
}

// ValidationBPD is the validation bpd (mean, standard error over the
// images) of the ε-network in store (its EMA weights when it has them).
func ValidationBPD(backend compute.Backend, store *model.Store) (float64, float64, error) {
	set, err := Load(Test)
	if err != nil {
		return 0, 0, err
	}
	x, err := set.Dequantized(0, valImages, 3)
	if err != nil {
		return 0, 0, err
	}
	eval, err := models.EMAStore(store)
	if err != nil {
		return 0, 0, err
	}
	net, err := models.NewAccessNet(backend, eval, Schedule(), false)
	if err != nil {
		return 0, 0, err
	}
	hutch, err := access.NewHutchinson(net, valProbes, access.Rademacher, 3)
	if err != nil {
		return 0, 0, err
	}
	res, err := likelihood.LogProb(x, access.NetModel{Net: net, Trace: hutch}, likelihood.Config{Schedule: Schedule(), RTol: valRTol})
	if err != nil {
		return 0, 0, err
	}
	bpd, err := likelihood.BitsPerDim(res.LogProb, Dim, &Quant)
	if err != nil {
		return 0, 0, err
	}
	m, se := stats.MeanSE(bpd)
	return m, se, nil
}

// The ELBO validation (ValidationELBO): valELBOImages held-out test images
// (the last ones of the test set, indices 10 000 − valELBOImages … 9 999,
// dequantised with seed 4), each at valELBOLevels log-SNR levels λ, one per
// equal-width stratum of [λ(t_max), λ(t_min)] at the stratum's midpoint,
// with one fixed Gaussian ε per image and level (seed 5).
const (
	valELBOImages = 512
	valELBOLevels = 24
)

// ELBOProtocol describes ValidationELBO in words.
func ELBOProtocol() string {
	return fmt.Sprintf("ELBO diffusion term on test images %d–9999 (dequantised), %d stratified log-SNR levels × 1 "+
		"fixed ε, EMA weights, paired with the skip mixture alone", 10000-valELBOImages, valELBOLevels)
}

// ELBOVal is one ELBO validation of an ε-network.
type ELBOVal struct {
	// Term is the network's ELBO diffusion term in bits per dimension,
	// ½(λ_max − λ_min) E_λ‖ε − ε̂(x_λ, λ)‖²/(d ln 2), mean over the images.
	Term, TermSE float64
	// Gain is the skip mixture's term minus the network's (positive: the
	// network's bound is that much tighter), with the standard error of the
	// paired per-image differences; 0 without a skip.
	Gain, GainSE float64
	// Lambda and LevelGain are the levels and each one's gain (same units,
	// summed over the levels it gives Gain).
	Lambda, LevelGain []float64
}

// ValidationELBO is the ε-network's (EMA weights) continuous-time ELBO
// diffusion term on fixed held-out draws and, when the network has a
// mixture skip, its gain over the skip alone on the same draws (VDM,
// Kingma et al. 2021: with λ = log SNR uniform on [λ_min, λ_max], the
// model-dependent part of the bound is ½(λ_max − λ_min)E‖ε − ε̂‖²; the
// two models share everything else, so the paired difference of their
// terms is the difference of their bounds). No ODE solve: a cheap,
// low-variance yardstick of what training adds to the skip.
func ValidationELBO(backend compute.Backend, store *model.Store) (*ELBOVal, error) {
	var skip *mixture.Gaussian
	if models.HasNetwork(store, models.MixtureScope) {
		var err error
		if skip, err = models.MixtureSkipOf(store); err != nil {
			return nil, err
		}
	}
	return elboAgainst(backend, store, skip, valELBOImages, valELBOLevels)
}

// elboAgainst is ValidationELBO on the last n test images at the given
// number of levels, with the gain measured against ref (nil: none).
func elboAgainst(backend compute.Backend, store *model.Store, skip *mixture.Gaussian, n, levels int) (*ELBOVal, error) {
	set, err := Load(Test)
	if err != nil {
		return nil, err
	}
	n = min(n, set.Images.N)
	x0, err := set.Dequantized(set.Images.N-n, n, 4)
	if err != nil {
		return nil, err
	}
	eval, err := models.EMAStore(store)
	if err != nil {
		return nil, err
	}
	net, err := models.NewAccessNet(backend, eval, Schedule(), false)
	if err != nil {
		return nil, err
	}
	s := Schedule()
	tMin, tMax := s.Interval()
	lam := func(t float64) float64 { return 2 * math.Log(s.Alpha(t)/s.Sigma(t)) }
	lo, hi := lam(tMax), lam(tMin)
	span := hi - lo
	rng := rand.New(rand.NewPCG(5, 0xe1b0))
	d := Dim
	per := make([]float64, n)     // network, Σ over levels of ‖ε − ε̂‖²
	perSkip := make([]float64, n) // skip alone
	out := &ELBOVal{}
	eps := mat.NewDense(n, d, nil)
	xt := mat.NewDense(n, d, nil)
	for l := range levels {
		target := lo + span*(float64(l)+0.5)/float64(levels)
		t := timeOfLambda(lam, target, tMin, tMax)
		co, err := schedule.At(s, t)
		if err != nil {
			return nil, err
		}
		for i := range n {
			er, xr, x0r := eps.RawRowView(i), xt.RawRowView(i), x0.RawRowView(i)
			for j := range d {
				er[j] = rng.NormFloat64()
				xr[j] = co.Alpha*x0r[j] + co.Sigma*er[j]
			}
		}
		gain, err := levelErrors(net, skip, co, xt, eps, per, perSkip)
		if err != nil {
			return nil, err
		}
		out.Lambda = append(out.Lambda, target)
		out.LevelGain = append(out.LevelGain, toBPD(gain, span, levels))
	}
	terms, gains := make([]float64, n), make([]float64, n)
	for i := range n {
		terms[i] = toBPD(per[i], span, levels)
		gains[i] = toBPD(perSkip[i]-per[i], span, levels)
	}
	out.Term, out.TermSE = stats.MeanSE(terms)
	if skip != nil {
		out.Gain, out.GainSE = stats.MeanSE(gains)
	}
	return out, nil
}

// levelErrors adds each row's ‖ε − ε̂‖² at one level to per (the
// network) and perSkip (the skip mixture alone, when given), and returns
// the mean over the rows of the skip's minus the network's.
func levelErrors(net *access.Net, skip *mixture.Gaussian, co schedule.Coefficients, xt, eps *mat.Dense, per, perSkip []float64) (float64, error) {
	e, err := net.EpsAt(co, xt)
	if err != nil {
		return 0, err
	}
	var ms *mat.Dense
	if skip != nil {
		res, err := skip.Eval(mixture.Query{At: co, X: xt, Want: mixture.Score})
		if err != nil {
			return 0, err
		}
		ms = res.Score
		ms.Scale(-co.Sigma, ms) // ε_mix = −σ ∇log q_t
	}
	sq := func(a, b []float64) float64 {
		s := 0.0
		for j := range a {
			s += (a[j] - b[j]) * (a[j] - b[j])
		}
		return s
	}
	gain := 0.0
	for i := range per {
		a := sq(eps.RawRowView(i), e.RawRowView(i))
		per[i] += a
		if ms != nil {
			b := sq(eps.RawRowView(i), ms.RawRowView(i))
			perSkip[i] += b
			gain += b - a
		}
	}
	return gain / float64(len(per)), nil
}

// toBPD converts a sum over the levels of squared ε errors to the ELBO
// term in bits per dimension: ½ span · (sum / levels) / (d ln 2).
func toBPD(sum, span float64, levels int) float64 {
	return 0.5 * span * sum / float64(levels) / (Dim * math.Ln2)
}

// timeOfLambda is the t in [tMin, tMax] with lam(t) = target (lam
// decreasing in t), by bisection.
func timeOfLambda(lam func(float64) float64, target, tMin, tMax float64) float64 {
	lo, hi := tMin, tMax
	for i := 0; i < 200 && hi-lo > 1e-15; i++ {
		if mid := 0.5 * (lo + hi); lam(mid) > target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return 0.5 * (lo + hi)
}
