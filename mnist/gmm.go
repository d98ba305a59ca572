package mnist

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// FitMixture fits a Gaussian mixture (mixture.Fit) to the 60 000
// training images, dequantised with seed 1 and labelled by digit.
func FitMixture(opt mixture.FitOptions) (*mixture.Gaussian, error) {
	return FitMixtureContext(context.Background(), opt)
}

// FitMixtureContext is FitMixture that ctx cancels (mixture.FitContext:
// within a fraction of a second of a fit of about a minute).
func FitMixtureContext(ctx context.Context, opt mixture.FitOptions) (*mixture.Gaussian, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	set, err := Load(Train)
	if err != nil {
		return nil, err
	}
	x, err := set.DequantizedContext(ctx, 0, set.Images.N, 1)
	if err != nil {
		return nil, err
	}
	labels := make([]int, set.Images.N)
	for i, l := range set.Labels {
		labels[i] = int(l)
	}
	g, _, err := mixture.FitContext(ctx, x, labels, opt)
	if err != nil {
		return nil, fmt.Errorf("mnist: fitting the mixture: %w", err)
	}
	return g, nil
}

// MixtureBPD is a mixture's exact bits per dimension (mean and standard
// error) on the first n test images, dequantised with seed 2: log q at the
// schedule's t_min (σ ≈ 10⁻³, the start of every PF-ODE likelihood here),
// where the diffused mixture is still a Gaussian mixture in closed form.
func MixtureBPD(g *mixture.Gaussian, n int) (mean, se float64, err error) {
	x, err := TestImages(n)
	if err != nil {
		return 0, 0, err
	}
	s := Schedule()
	tMin, _ := s.Interval()
	co, err := schedule.At(s, tMin)
	if err != nil {
		return 0, 0, err
	}
	res, err := g.Eval(mixture.Query{At: co, X: x, Want: mixture.LogProb})
	if err != nil {
		return 0, 0, err
	}
	bpd, err := likelihood.BitsPerDim(res.LogProb, Dim, &Quant)
	if err != nil {
		return 0, 0, err
	}
	mean, se = stats.MeanSE(bpd)
	return mean, se, nil
}

// FitRecord is what a mixture checkpoint made by FitMixtureCheckpoint
// records of its fit.
type FitRecord struct {
	Options    mixture.FitOptions
	Components int
	Seconds    float64 // fit time
	Machine    string
	TestBPD    float64 // exact, on TestImages dequantised test images (MixtureBPD)
	TestSE     float64 // NaN (undefined) from one image
	TestImages int
}

// MarshalJSON leaves out an undefined TestSE (one test image), which JSON
// cannot hold as a number.
func (r FitRecord) MarshalJSON() ([]byte, error) {
	type plain FitRecord
	out := struct {
		plain
		TestSE *float64 `json:"TestSE,omitempty"`
	}{plain: plain(r)}
	if !math.IsNaN(r.TestSE) {
		out.TestSE = &r.TestSE
	}
	return json.Marshal(out)
}

// FitMixtureCheckpoint fits opt to the training images (FitMixture) and
// returns it as a checkpoint stamped with the data's provenance (the
// dequantised training set; no schedule: q_0 needs none), with its exact
// test bpd on testImages images (0: not measured). ctx cancels the fit.
func FitMixtureCheckpoint(ctx context.Context, opt mixture.FitOptions, testImages int) (*checkpoint.Checkpoint, *FitRecord, error) {
	start := time.Now()
	g, err := FitMixtureContext(ctx, opt)
	if err != nil {
		return nil, nil, err
	}
	rec := &FitRecord{Options: opt, Components: g.Components(), Seconds: time.Since(start).Seconds(), Machine: Machine(), TestImages: testImages}
	if testImages > 0 {
		if rec.TestBPD, rec.TestSE, err = MixtureBPD(g, testImages); err != nil {
			return nil, nil, err
		}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, nil, err
	}
	nc := 0
	for _, l := range g.Classes() { // labels 0 … nc−1
		nc = max(nc, l+1)
	}
	c, err := checkpoint.Mixture(g, nc, "float32", raw)
	if err != nil {
		return nil, nil, err
	}
	p, err := trainProvenance(NetSpec{Params: map[string]any{models.ParamDequantize: dequantLevel}}, "")
	if err != nil {
		return nil, nil, err
	}
	p.Dequantize = "uniform over each pixel's bin of width 2/256, seed 1 (the fit's one draw)"
	if err := checkpoint.Stamp(c, nil, p); err != nil {
		return nil, nil, err
	}
	return c, rec, nil
}

// LoadMixture reads the Gaussian mixture in a checkpoint: a fitted mixture
// (FitMixtureCheckpoint) or an ε-network's skip.
func LoadMixture(path string) (*mixture.Gaussian, error) {
	c, err := checkpoint.Read(path)
	if err != nil {
		return nil, err
	}
	store, err := checkpoint.LoadWeights(c)
	if err != nil {
		return nil, fmt.Errorf("mnist: %s: %w", path, err)
	}
	g, err := models.MixtureSkipOf(store)
	if err != nil {
		return nil, fmt.Errorf("mnist: %s: %w", path, err)
	}
	return g, nil
}
