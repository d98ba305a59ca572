package mnist

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
)

// ValPoint is one validation of an ε-network during training.
type ValPoint struct {
	Step    int64
	Seconds float64 // training time when measured (summed over resumed runs)
	BPD, SE float64 // mean validation bpd and its standard error over the images
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
