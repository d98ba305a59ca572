package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/pfode"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/studies/density"
)

// sampleDensityFlags are dfx sample's density-guidance flags.
type sampleDensityFlags struct {
	target, trace string
	until, gain   float64
	ref           int
}

func densityFlags(fs *flag.FlagSet) *sampleDensityFlags {
	d := &sampleDensityFlags{}
	fs.StringVar(&d.target, "density", "", "density guidance of unconditional samples: offset:P (P nats of log q per "+
		"unit time; > 0 raises it) or quantile:p (hold log q_t at its p-quantile under q_t)")
	fs.StringVar(&d.trace, "trace", "df-tm-c", "trace of the diffusion Fisher density guidance steers and tracks with: "+
		strings.Join(density.Traces(), "|")+" (dfx nll's spellings dftm, dftm-c, dftmc too)")
	fs.Float64Var(&d.until, "until", 0, "no density guidance below this t (in [0, 1))")
	fs.Float64Var(&d.gain, "gain", 10, "quantile target: how fast a sample returns to the level (per unit time, finite ≥ 0)")
	fs.IntVar(&d.ref, "ref", 64, "quantile target: unguided samples whose tracked log q gives the level, 2…4096")
	return d
}

// sampleDensity is a checked density-guidance request.
type sampleDensity struct {
	kind  string // offset or quantile
	value float64
	trace access.Spec // the -trace (its Label is flags.trace)
	flags *sampleDensityFlags
}

// check validates the flags (no network is loaded); nil without -density.
// Density guidance samples the unconditional model with its own ODE solver:
// the class, scale and adjoint flags do not apply.
func (d *sampleDensityFlags) check(fs *flag.FlagSet, guide string) (*sampleDensity, error) {
	if d.target == "" {
		for _, f := range []string{"trace", "until", "gain", "ref"} {
			if isSet(fs, f) {
				return nil, fmt.Errorf("--%s applies to density guidance: give --density offset:P|quantile:p, or leave it out (it would be ignored)", f)
			}
		}
		return nil, nil
	}
	for _, f := range []string{"class", "scale"} {
		if isSet(fs, f) {
			return nil, fmt.Errorf("--%s does not apply to density guidance, which samples the unconditional model", f)
		}
	}
	if guide != "" {
		return nil, fmt.Errorf("--density and --guide are two samplers: give one")
	}
	kind, v, err := density.ParseDensityTarget(d.target)
	if err != nil {
		return nil, fmt.Errorf("--density: %w", err)
	}
	if kind == "offset" {
		for _, f := range []string{"gain", "ref"} {
			if isSet(fs, f) {
				return nil, fmt.Errorf("--%s applies to a quantile target, not to --density %s", f, d.target)
			}
		}
	}
	trace, err := densityTrace(d.trace)
	if err != nil {
		return nil, err
	}
	d.trace = trace.Label()
	if err := finite("gain", d.gain, 0, true); err != nil {
		return nil, err
	}
	if !(d.until >= 0 && d.until < 1) {
		return nil, fmt.Errorf("--until must be a number in [0, 1), got %g", d.until)
	}
	if d.ref < 2 || d.ref > 4096 {
		return nil, fmt.Errorf("--ref must be an integer in [2, 4096], got %d", d.ref)
	}
	return &sampleDensity{kind: kind, value: v, trace: trace, flags: d}, nil
}

// densityTrace reads a -trace name with dfx nll's parser (parseTrace, on
// dfx/access's registry), so that both commands take the same spellings
// (df-tm or dftm, df-tm-c, dftm-c or dftmc, hutchinson:K or hutchinson-K,
// any case), and checks it is one of density guidance's traces
// (density.CheckTrace, whose Label names it as the study does); it builds
// nothing. Hutch++ is nll's alone.
func densityTrace(v string) (access.Spec, error) {
	unknown := fmt.Errorf("unknown --trace %q (want %s, with K in 1…%d)", v, density.TraceForms(), density.MaxTraceK)
	tr, err := parseTrace(v)
	switch {
	case err != nil:
		return access.Spec{}, unknown
	case tr.Family == access.HutchPPFamily:
		return access.Spec{}, fmt.Errorf("--trace %s: Hutch++ is a trace of dfx nll; density guidance takes %s", v, density.TraceForms())
	}
	s, err := density.CheckTrace(tr.spec)
	if err != nil {
		return access.Spec{}, unknown
	}
	return s, nil
}

func (s *sampleDensity) String() string {
	out := fmt.Sprintf("density %s:%g, %s trace", s.kind, s.value, s.flags.trace)
	if s.flags.until > 0 {
		out += fmt.Sprintf(", until t = %g", s.flags.until)
	}
	return out
}

// sample draws n unconditional density-guided samples (noises (seed, 0…n−1),
// RK4 with steps steps) and returns them with the tracked bits per
// dimension; it reports the level and the samples' bpd on stderr.
func (s *sampleDensity) sample(ctx context.Context, nets *mnist.Networks, n, steps int, seed uint64, stderr io.Writer) (*mat.Dense, error) {
	m, err := density.TraceModel(nets.Net, s.flags.trace, seed, access.PromptRows(mnist.Dim))
	if err != nil {
		return nil, err
	}
	cfg := density.SampleConfig{Schedule: mnist.Schedule(), Grid: density.GridLogSNR, Steps: steps, Until: s.flags.until}
	var target pfode.DensityTarget = pfode.Offset{PerUnitTime: s.value}
	if s.kind == "quantile" {
		q, _, err := density.ReferenceLevels(ctx, m, mnist.InitialNoise(seed+1, 0, s.flags.ref), []float64{s.value}, cfg)
		if err != nil {
			return nil, err
		}
		target = q.Level(0, s.flags.gain)
		fmt.Fprintf(stderr, "sample: level %.4f bpd at t_min (%s)\n", bpd(q.Values[len(q.Values)-1][0]), q.How)
	}
	xT := mnist.InitialNoise(seed, 0, n)
	run, err := density.Sample(ctx, m, target, xT, density.PriorStart(cfg.Schedule, xT), cfg, nil)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, e := range run.Ell {
		parts = append(parts, fmt.Sprintf("%.4f", bpd(e)))
	}
	fmt.Fprintf(stderr, "sample: tracked bpd of the samples (%s trace): %s; %d of %d guided evaluations "+
		"speed-limited\n", s.flags.trace, strings.Join(parts, " "), run.Guide.Limited, run.Guide.Evals)
	return run.X, nil
}

// network is the trace network the -trace needs beside the ε-network
// (models.TraceNetwork: TraceScope, CentredTraceScope, or "").
func (s *sampleDensity) network() string { return models.TraceNetwork(s.trace) }

// bpd is a log-density at t_min in bits per dimension.
func bpd(logq float64) float64 { return density.BitsPerDim(mnist.Problem(), logq) }
