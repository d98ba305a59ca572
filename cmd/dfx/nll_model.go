package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/membudget"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// nllModel is the score and trace that the likelihood ODE integrates.
type nllModel struct {
	kind, trace string // "gmm" or "checkpoint"; the trace's name
	model       score.Model
	mixture     mixture.Mixture // the --gmm mixture (for --exact), nil for networks
	workBytes   func(batch int) float64
	info        string
}

func (m nllModel) dynamics() score.Model   { return m.model }
func (m nllModel) describe() string        { return m.info }
func (m nllModel) bytes(batch int) float64 { return m.workBytes(batch) }

// countingModel calls tick after every evaluation (for progress).
type countingModel struct {
	inner score.Model
	tick  func()
}

func (c countingModel) Eval(at schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	return c.EvalContext(context.Background(), at, x, want)
}

// EvalContext passes ctx on, so that the inner model can stop inside an
// evaluation.
func (c countingModel) EvalContext(ctx context.Context, at schedule.Coefficients, x *mat.Dense, want score.Want) (*score.Eval, error) {
	ev, err := score.EvalContext(ctx, c.inner, at, x, want)
	c.tick()
	return ev, err
}

// --- Gaussian mixture -------------------------------------------------------

// maxGMMBytes bounds the JSON read by --gmm (the budget may lower it).
const maxGMMBytes = 256 << 20

// loadGMM reads and validates a --gmm file for points of dimension d.
func loadGMM(path string, d int, s schedule.Schedule, budget membudget.Budget) (nllModel, error) {
	if strings.HasSuffix(path, ".dfxckpt") {
		return loadGMMCheckpoint(path, d)
	}
	var r io.Reader
	name := path
	if path == "-" {
		r, name = input.Stdin, input.StdinName
	} else {
		f, err := input.Open(path)
		if err != nil {
			return nllModel{}, fmt.Errorf("--gmm: %w", err)
		}
		defer f.Close()
		r = f
	}
	limit := int64(maxGMMBytes)
	if budget.Bytes > 0 {
		limit = min(limit, budget.Bytes/4)
	}
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nllModel{}, fmt.Errorf("--gmm %s: %w", name, err)
	}
	if int64(len(raw)) > limit {
		return nllModel{}, fmt.Errorf("--gmm %s: larger than %s (the bound on a mixture file: 256 MiB, or a quarter "+
			"of the memory budget, --max-memory)", name, membudget.Format(float64(limit)))
	}
	g, err := input.ParseGMM(raw)
	if err != nil {
		return nllModel{}, fmt.Errorf("--gmm %s: %w", name, err)
	}
	k, gd := g.Means.Dims()
	if gd != d {
		return nllModel{}, fmt.Errorf("--gmm %s is a mixture in dimension %d, the --points are of dimension %d", name, gd, d)
	}
	m, err := mixture.NewGaussian(g.Means, g.Covs, g.Weights)
	if err != nil {
		return nllModel{}, fmt.Errorf("--gmm %s: %w", name, err)
	}
	fk, fd := float64(k), float64(d)
	return nllModel{kind: "gmm", trace: "exact", model: score.Exact{Mixture: m}, mixture: m,
		workBytes: func(b int) float64 { return 8*fk*fd*fd*3 + 8*float64(b)*fk*(fd+4)*4 },
		info:      fmt.Sprintf("a %d-component Gaussian mixture", k)}, nil
}

// --- trained networks -------------------------------------------------------

// traceSpec is a parsed --trace: a spec of dfx/access's registry.
type traceSpec struct {
	access.Spec
	spec string // as given, in lower case
}

func (t traceSpec) random() bool { return t.Random }

// String is how dfx nll has always named the trace in its output (dftm,
// hutchinson:K, …), whichever spelling was given.
func (t traceSpec) String() string {
	name := map[string]string{access.VJPExactFamily: "vjp", access.DFTMFamily: "dftm", access.DFTMCFamily: "dftm-c", access.HutchPPFamily: "hutchpp"}[t.Family]
	if name == "" {
		name = t.Family
	}
	if t.K > 0 {
		name += ":" + strconv.Itoa(t.K)
	}
	return name
}

// parseTrace reads --trace (any case) with dfx/access's registry.
func parseTrace(v string) (traceSpec, error) {
	spec := strings.ToLower(strings.TrimSpace(v))
	s, err := access.ParseTrace(spec)
	var se *access.SpecError
	switch {
	case errors.As(err, &se) && se.Unknown:
		return traceSpec{}, fmt.Errorf("unknown --trace %q (want one of %s)", v, se.Valid)
	case errors.As(err, &se):
		return traceSpec{}, fmt.Errorf("--trace %s: %s", spec, se.Reason)
	case err != nil:
		return traceSpec{}, err
	}
	return traceSpec{Spec: s, spec: spec}, nil
}

// loadNetModel reads the --checkpoint files (weights checkpoints; networks
// in separate files are put side by side) and builds the score and trace.
func loadNetModel(paths []string, tr traceSpec, d int, s schedule.Schedule, seed uint64) (nllModel, error) {
	set, err := checkpoint.ReadSet(paths, d, s)
	if err != nil {
		return nllModel{}, fmt.Errorf("--checkpoint: %w", err)
	}
	need := models.TraceNetwork(tr.Spec)
	if err := set.Use(need, "--trace "+tr.String()); err != nil {
		return nllModel{}, fmt.Errorf("--checkpoint: %w", err)
	}
	store := set.Store
	backend, err := models.NewBackend()
	if err != nil {
		return nllModel{}, fmt.Errorf("backend: %w", err)
	}
	net, err := models.NewAccessNet(backend, store, s, need != "")
	if err != nil {
		return nllModel{}, fmt.Errorf("--checkpoint: %w", err)
	}
	if tr.Needs&access.NeedsT == 0 {
		net.T = nil
	}
	// The trace is evaluated PerCall points at a time, which bounds a call's
	// rows and fixes the probe stream (drawn per call from the seed); inside
	// it, VJP rows run in graph calls of PromptRows, short enough for an
	// interrupt to be seen within a fraction of a second, without changing
	// which probe each point gets.
	prompt := access.PromptRows(d)
	est, err := access.NewTrace(tr.spec, access.Env{Net: net, Seed: seed, ExactRows: prompt, ProbeRows: prompt})
	if err != nil {
		return nllModel{}, fmt.Errorf("--trace %s: %w", tr, err)
	}
	rowsPer := access.RowsPerPoint(est, d) // graph rows per point of one trace call
	nm := access.NetModel{Net: net, Trace: est, PerCall: max(1, access.DefaultMaxRows/rowsPer)}
	width := float64(model.GetParamOr(store.Scope("/"), models.ParamWidth, 256))
	fd := float64(d)
	return nllModel{kind: "checkpoint", trace: tr.String(), model: nm,
		workBytes: func(b int) float64 {
			rows := float64(min(b, nm.PerCall) * rowsPer)
			return rows*fd*8*4 + rows*(fd+width)*4*32
		},
		info: fmt.Sprintf("networks %s, trace %s", strings.Join(set.Networks(), "+"), tr)}, nil
}

// loadGMMCheckpoint is --gmm FILE.dfxckpt: the Gaussian mixture stored in a
// checkpoint (`dfx fit`'s, or an ε-network's skip), an exact model.
func loadGMMCheckpoint(path string, d int) (nllModel, error) {
	c, err := checkpoint.Read(path)
	if err != nil {
		return nllModel{}, fmt.Errorf("--gmm: %w", err)
	}
	if c.Header.Dim != d {
		return nllModel{}, fmt.Errorf("--gmm %s is a mixture in dimension %d, the --points are of dimension %d", path, c.Header.Dim, d)
	}
	store, err := checkpoint.LoadWeights(c)
	if err != nil {
		return nllModel{}, fmt.Errorf("--gmm %s: %w", path, err)
	}
	m, err := models.MixtureSkipOf(store)
	if err != nil {
		return nllModel{}, fmt.Errorf("--gmm %s: %w", path, err)
	}
	k := m.Components()
	fk, fd, fr := float64(k), float64(d), float64(m.Rank(0))
	return nllModel{kind: "gmm", trace: "exact", model: score.Exact{Mixture: m}, mixture: m,
		workBytes: func(b int) float64 { return 8*fk*fd*fr*2 + 8*float64(min(b, 64))*fk*fd*3 },
		info:      fmt.Sprintf("a %d-component Gaussian mixture (rank %d) from %s", k, m.Rank(0), path)}, nil
}
