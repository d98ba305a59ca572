package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/mnist"
)

// The rewards of dfx sample --guide.
var guideRewards = []string{"class", "style", "identity", "centring"}

// sampleGuideFlags are dfx sample's adjoint-guidance flags as parsed.
type sampleGuideFlags struct {
	guide, operator, window, reference string
	strength                           float64
	inner, target, referenceRow        int
}

// guideFlags registers the adjoint-guidance flags of dfx sample.
func guideFlags(fs *flag.FlagSet) *sampleGuideFlags {
	g := &sampleGuideFlags{}
	fs.StringVar(&g.guide, "guide", "", "adjoint guidance towards a reward: "+strings.Join(guideRewards, "|")+" (default: none)")
	fs.StringVar(&g.operator, "operator", mnist.OperatorDFEA, "Fisher product of the adjoint pass: dfea|vjp")
	fs.StringVar(&g.window, "window", "", "guided outer steps FROM:TO, 0 ≤ FROM < TO ≤ steps (default: 30%–70% of the steps, 15:35 of 50)")
	fs.Float64Var(&g.strength, "strength", 0.2, "guidance step as a fraction of the noise's norm, finite ≥ 0")
	fs.IntVar(&g.inner, "inner", 10, "DDIM steps of the inner solve that predicts x̂₀")
	fs.IntVar(&g.target, "target", -1, "the class reward's digit 0…9 (default: each row's class)")
	fs.StringVar(&g.reference, "reference", "", "reference image of the style and identity rewards: IDX, CSV or .npy")
	fs.IntVar(&g.referenceRow, "reference-row", 0, "which image of -reference (0: the first)")
	return g
}

// sampleGuide is a checked guidance request.
type sampleGuide struct {
	reward, operator string
	target           int       // −1: each row's class
	ref              []float64 // style, identity
	cfg              adjoint.Config
}

// check validates the flags against the outer step count; it returns nil
// without --guide. It reads --reference, and loads no network.
func (g *sampleGuideFlags) check(fs *flag.FlagSet, steps int) (*sampleGuide, error) {
	if g.guide == "" {
		for _, f := range []string{"operator", "window", "strength", "inner", "target", "reference", "reference-row"} {
			if isSet(fs, f) {
				return nil, fmt.Errorf("--%s applies to adjoint guidance: give --guide %s, or leave it out (it would be ignored)", f, strings.Join(guideRewards, "|"))
			}
		}
		return nil, nil
	}
	known := false
	for _, r := range guideRewards {
		known = known || g.guide == r
	}
	if !known {
		return nil, fmt.Errorf("unknown --guide %q (want one of %s)", g.guide, strings.Join(guideRewards, ", "))
	}
	if _, err := access.ParseOperator(g.operator); err != nil {
		return nil, fmt.Errorf("unknown --operator %q (want one of %s)", g.operator, access.OperatorSpellings())
	}
	from, to := 3*steps/10, 7*steps/10
	if isSet(fs, "window") {
		var err error
		if from, to, err = parseWindow(g.window, steps); err != nil {
			return nil, err
		}
		if from == to { // guidance on no step would be plain sampling under a guided name
			return nil, fmt.Errorf("--window %d:%d guides no step: give FROM < TO", from, to)
		}
	} else if from == to {
		return nil, fmt.Errorf("--steps %d leaves the default guidance window (30%%–70%% of the steps) empty: give more --steps, or --window FROM:TO", steps)
	}
	if err := finite("strength", g.strength, 0, true); err != nil {
		return nil, err
	}
	if g.inner < 1 || g.inner > 1000 {
		return nil, fmt.Errorf("--inner must be an integer in [1, 1000], got %d", g.inner)
	}
	if isSet(fs, "target") {
		if g.guide != "class" {
			return nil, fmt.Errorf("--target applies to --guide class, not %s (it would be ignored)", g.guide)
		}
		if g.target < 0 || g.target > 9 {
			return nil, fmt.Errorf("--target must be a digit in 0…9, got %d", g.target)
		}
	}
	needsRef := g.guide == "style" || g.guide == "identity"
	switch {
	case needsRef && g.reference == "":
		return nil, fmt.Errorf("--guide %s needs --reference FILE (an image)", g.guide)
	case !needsRef && g.reference != "":
		return nil, fmt.Errorf("--reference applies to --guide style or identity, not %s (it would be ignored)", g.guide)
	case isSet(fs, "reference-row") && g.reference == "":
		return nil, errors.New("--reference-row applies to --reference")
	case g.referenceRow < 0:
		return nil, fmt.Errorf("--reference-row must be ≥ 0, got %d", g.referenceRow)
	}
	out := &sampleGuide{reward: g.guide, operator: g.operator, target: g.target,
		cfg: adjoint.Config{Steps: steps, From: from, To: to, InnerSteps: g.inner, Strength: g.strength, Normalize: true}}
	if needsRef {
		ref, err := readReference(g.reference, g.referenceRow)
		if err != nil {
			return nil, err
		}
		out.ref = ref
	}
	return out, nil
}

// parseWindow parses --window FROM:TO against the outer step count.
func parseWindow(v string, steps int) (from, to int, err error) {
	a, b, ok := strings.Cut(v, ":")
	from, errA := strconv.Atoi(strings.TrimSpace(a))
	to, errB := strconv.Atoi(strings.TrimSpace(b))
	if !ok || errA != nil || errB != nil {
		return 0, 0, fmt.Errorf("--window %q: want FROM:TO, two integers", v)
	}
	if from < 0 || from > to || to > steps {
		return 0, 0, fmt.Errorf("--window %d:%d must satisfy 0 ≤ FROM ≤ TO ≤ --steps %d", from, to, steps)
	}
	return from, to, nil
}

// readReference reads image row of path: IDX images (pixels 0…255, scaled
// to [−1, 1]) or a CSV/.npy matrix of 784 columns in [−1, 1].
func readReference(path string, row int) ([]float64, error) {
	if input.IsIDX(path) {
		im, err := mnist.ReadImages(path)
		if err != nil {
			return nil, fmt.Errorf("--reference: %w", err)
		}
		if im.Dim() != mnist.Dim {
			return nil, fmt.Errorf("--reference %s: images of %d×%d pixels, want 28×28", path, im.Rows, im.Cols)
		}
		if row >= im.N {
			return nil, fmt.Errorf("--reference-row %d: %s holds %d images", row, path, im.N)
		}
		x, err := (&mnist.Set{Images: im}).Scaled(row, 1)
		if err != nil {
			return nil, fmt.Errorf("--reference: %w", err)
		}
		return x.RawRowView(0), nil
	}
	m, err := input.ReadFile(path, input.Options{MaxBytes: 1 << 30})
	if err != nil {
		return nil, fmt.Errorf("--reference: %w", err)
	}
	r, c := m.Dims()
	if c != mnist.Dim {
		return nil, fmt.Errorf("--reference %s: rows of %d values, want %d (a 28×28 image)", path, c, mnist.Dim)
	}
	if row >= r {
		return nil, fmt.Errorf("--reference-row %d: %s holds %d rows", row, path, r)
	}
	x := append([]float64(nil), m.RawRowView(row)...)
	for j, v := range x {
		if math.IsNaN(v) || v < -1 || v > 1 {
			return nil, fmt.Errorf("--reference %s: row %d pixel %d is %g, want values in [−1, 1]", path, row, j, v)
		}
	}
	return x, nil
}

// sample draws rows [lo, hi) of the run with guidance.
func (g *sampleGuide) sample(ctx context.Context, nets *mnist.Networks, class []int, scale float64, seed uint64, lo, hi int) (*adjoint.Result, error) {
	var reward adjoint.Loss
	var err error
	switch g.reward {
	case "class":
		k := g.target
		if k < 0 {
			reward, err = nets.ClassReward(class[lo:hi]...)
		} else {
			reward, err = nets.ClassReward(k)
		}
	case "style":
		reward, err = nets.StyleReward(g.ref)
	case "identity":
		reward, err = nets.IdentityReward(g.ref)
	case "centring":
		reward = mnist.CentringReward()
	}
	if err != nil {
		return nil, err
	}
	return mnist.GuidedSampleRows(ctx, nets, class, scale, reward, g.operator, g.cfg, seed, lo, hi)
}

// String describes the guidance for a figure's title.
func (g *sampleGuide) String() string {
	s := fmt.Sprintf("adjoint %s reward (%s), steps %d–%d, strength %g, %d inner", g.reward, g.operator, g.cfg.From, g.cfg.To, g.cfg.Strength, g.cfg.InnerSteps)
	if g.target >= 0 {
		s += fmt.Sprintf(", target %d", g.target)
	}
	return s
}
