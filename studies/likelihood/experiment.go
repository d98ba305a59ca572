// Package likelihood is the likelihood study on any image problem: paper
// Table 1 (the cost of every trace estimator and F·v operator), Figures
// 1–2 (NLL against guidance, samples ranked by NLL), bits per dimension of
// the test set, the estimators against the exact Fisher of the training
// set's Dirac mixture, and the NLL along a sample's own trajectory. It
// registers `dfx reproduce mnist` on mnist.Problem.
package likelihood

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	dfxlikelihood "github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/progress"
	"github.com/dfx-lab/dfx/internal/timing"
	"github.com/dfx-lab/dfx/problem"
)

// Config sizes the study (paper Table 1, Figures 1–2 and the exact-Fisher
// study at image scale).
type Config struct {
	// Name names the experiment: its report, folder and command.
	Name    string
	Profile report.Profile
	Seed    uint64
	// Data names the data set in titles ("MNIST"); Anchor and AnchorBPD are
	// a published test bpd shown beside ours ("": none).
	Data      string
	Anchor    string
	AnchorBPD float64

	// Table 1: interleaved timing rounds; ExactAt64 also times the exact
	// VJP trace at batch 64 (≈ 50 000 VJPs, one round).
	TimingRounds  int
	TimingBatches []int
	ExactAt64     bool

	// Ground truth: queries per split (train, test) at each time.
	TruthTimes   []float64
	TruthQueries int

	// Bits per dimension on the test set.
	BPDStart      float64 // s, the start time of the PF-ODE
	BPDSteps      int     // Heun steps of the fixed-step solver (test set, Figures 1b and 2, trajectories)
	BPDImages     int     // test images with DF-TM (10 000: the whole set)
	CompareImages int     // images of the side-by-side comparison from the paper protocol's t₁
	DataImages    int     // images of the side-by-side comparison from s
	CompareSteps  int     // Euler steps of the comparison from s (the same trajectory for every trace)
	DataSteps     int     // Heun steps of Hutchinson-16's data bpd from s
	ConvSteps     []int   // Heun steps of the convergence study
	ConvRTol      float64 // dopri5 tolerance of the convergence study

	// Parts are the parts Run computes (ParseParts; nil: all of them).
	Parts map[string]bool
	// Checkpoint, when set, is the file of an ε-network imported by dfx
	// import, on which the registered experiment runs the study instead of
	// the committed networks (MNIST's data; t_θ and ν_θ from -nets).
	Checkpoint string

	// Figure 1b and 2.
	Scales          []float64 // guidance scales s (ε̃ = ε_∅ + s(ε_c − ε_∅))
	SamplesPerScale int       // balanced over the 10 classes
	DDIMSteps       int
	Fig2Seeds       int     // per class
	Fig2Scale       float64 // guidance scale of Figure 2
	TrajSamples     int     // unconditional samples for the trajectory NLL
}

// Full is the committed profile (≤ 30 min on the 2-core CPU).
func Full() Config {
	return Config{
		Profile: report.Full, Seed: 1, TimingRounds: 5, TimingBatches: []int{1, 64}, ExactAt64: true,
		TruthTimes: []float64{0.02, 0.05, 0.1, 0.3, 0.7}, TruthQueries: 16,
		// CompareImages 16 (64 with the first, residual-MLP ε-network): the exact VJP trace of the
		// mixture-skip network costs ≈ 13 s per image and evaluation on 2 cores.
		BPDStart: 1e-5, BPDSteps: 10, BPDImages: 10000, CompareImages: 16, DataImages: 16, CompareSteps: 6, DataSteps: 20,
		ConvSteps: []int{5, 10, 20, 40}, ConvRTol: 1e-4,
		Scales:          []float64{1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5},
		SamplesPerScale: 500, DDIMSteps: 20, Fig2Seeds: 16, Fig2Scale: 3.5, TrajSamples: 64,
	}
}

// Quick runs every part at toy size (≈ 1–2 min; for tests and the notebook).
func Quick() Config {
	return Config{
		Profile: report.Quick, Seed: 1, TimingRounds: 2, TimingBatches: []int{1},
		TruthTimes: []float64{0.05, 0.4}, TruthQueries: 1,
		BPDStart: 1e-5, BPDSteps: 10, BPDImages: 64, CompareImages: 1, DataImages: 1, CompareSteps: 3, DataSteps: 4,
		ConvSteps: []int{5, 10}, ConvRTol: 1e-2,
		Scales:          []float64{1.5, 7.5, 13.5},
		SamplesPerScale: 20, DDIMSteps: 10, Fig2Seeds: 4, Fig2Scale: 3.5, TrajSamples: 8,
	}
}

// Result is everything the study measured.
type Result struct {
	Config Config
	Image  problem.ImageShape
	// TrainImages and TestImages count the data; Classes are the networks'.
	TrainImages, TestImages, Classes int
	Machine                          string
	Backend                          string
	Records                          map[string]*problem.TrainRecord
	Timing                           *TimingResult
	Truth                            *TruthResult
	BPD                              *BPDResult
	Guidance                         *GuidanceResult
	Fig2                             *Fig2Result
	Traj                             *TrajResult
	Elapsed                          time.Duration
}

// Run runs every part of the study on p's data and on the networks of the
// folder nets ("": p's committed ones).
func Run(ctx context.Context, p *problem.Problem, nets string, cfg Config, log io.Writer) (*Result, error) {
	start := time.Now()
	nw, err := p.Networks(ctx, nets)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Image: p.Image, Machine: timing.Machine(), Backend: nw.Backend, Records: nw.Records}
	step := progress.Steps(ctx, log, p.Name)
	train, err := p.Train(ctx)
	if err != nil {
		return nil, err
	}
	test, err := p.Test(ctx)
	if err != nil {
		return nil, err
	}
	res.TrainImages, _ = train.Dims()
	res.TestImages, _ = test.Dims()
	res.Classes = nw.Classes
	if nw.Classes == 0 && (cfg.part(PartGuidance) || cfg.part(PartFig2)) {
		return nil, fmt.Errorf("likelihood: the %s and %s parts need a class-conditional ε-network; %s's is unconditional", PartGuidance, PartFig2, p.Name)
	}
	s := study{p: p, nets: nw, cfg: cfg, log: log}
	parts := []struct {
		name, what string
		run        func() error
	}{
		{PartTiming, "Table 1 timings", func() (err error) { res.Timing, err = s.timing(ctx, train); return }},
		{PartTruth, "exact-Fisher ground truth", func() (err error) { res.Truth, err = s.truth(ctx, train, test); return }},
		{PartBPD, "bits per dimension", func() (err error) { res.BPD, err = s.bpd(ctx); return }},
		{PartGuidance, "Figure 1b guidance sweep", func() (err error) { res.Guidance, err = s.guidance(ctx); return }},
		{PartFig2, "Figure 2 ranking", func() (err error) { res.Fig2, err = s.fig2(ctx, train); return }},
		{PartTraj, "trajectory NLL", func() (err error) { res.Traj, err = s.traj(ctx); return }},
	}
	for _, part := range parts {
		if !cfg.part(part.name) {
			continue
		}
		if err := step(part.what, part.run); err != nil {
			return nil, err
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// The study's parts, in the order Run computes them.
const (
	PartTiming   = "timing"   // Table 1
	PartTruth    = "truth"    // the estimators against the exact Fisher
	PartBPD      = "bpd"      // test bits per dimension
	PartGuidance = "guidance" // Figure 1b (class-conditional networks)
	PartFig2     = "fig2"     // Figure 2 (class-conditional networks)
	PartTraj     = "traj"     // the NLL along samples' trajectories
)

// Parts lists every part.
var Parts = []string{PartTiming, PartTruth, PartBPD, PartGuidance, PartFig2, PartTraj}

// ParseParts reads a comma-separated list of parts ("" or "all": every
// part).
func ParseParts(v string) (map[string]bool, error) {
	if v == "" || v == "all" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(Parts, name) {
			return nil, fmt.Errorf("likelihood: part %q: want some of %s (comma-separated) or all", name, strings.Join(Parts, ","))
		}
		out[name] = true
	}
	return out, nil
}

func (c Config) part(name string) bool { return c.Parts == nil || c.Parts[name] }

// study is one run's problem, networks and configuration.
type study struct {
	p    *problem.Problem
	nets *problem.Networks
	cfg  Config
	log  io.Writer
}

// quant is the pixel grid the study's bits per dimension count on.
func (s study) quant() *dfxlikelihood.Quantization {
	q := s.p.Image.Quantization()
	return &q
}
