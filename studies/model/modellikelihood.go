package model

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gomlx/compute"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/likelihood"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/score"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/internal/workstore"
	"github.com/dfx-lab/dfx/mnist"
)

// likelihood computes (or reads from Config.Work, and completes) the test
// bpd at RTol and 10·RTol, batch by batch, and the skip mixture's exact bpd.
// A shard computes only its batches; the others are read when kept.
func (res *ModelEvalResult) likelihood(ctx context.Context, backend compute.Backend, net *access.Net, trace score.TraceEstimator,
	skip *mixture.Gaussian, log io.Writer) error {
	cfg, p := res.Config, res.problem
	x, err := p.Dequantized(ctx, cfg.Images, 2)
	if err != nil {
		return err
	}
	if skip != nil {
		if res.Mixture, err = mixtureBPDAt(p, skip, x); err != nil {
			return err
		}
	}
	want := likelihoodSettings{Network: cfg.label(), Images: cfg.Images, Batch: cfg.batch(), RTol: cfg.RTol, Probes: cfg.Probes, Seed: cfg.Seed,
		Trace: trace.Name()}
	kept, err := openLikelihood(cfg, want, res.digest, backend.Name())
	if err != nil {
		return err
	}
	readWhere, readSeconds := kept.where()
	if n := kept.held(); n > 0 {
		fmt.Fprintf(log, "mnist-model: %d of %d batches read from %s (%s, %.0f s)\n", n, want.batches(), cfg.Work, readWhere, readSeconds)
	}
	var nfe []int
	seconds := 0.0 // this run's
	for b := range want.batches() {
		mine := kept.Mine()
		w, found, err := kept.batch(b)
		switch {
		case err != nil:
			return err
		case !found && !mine: // another shard's, not kept yet
			continue
		case !found:
			t0 := time.Now()
			if w, err = res.likelihoodBatch(ctx, net, trace, x, want, b); err != nil {
				return err
			}
			seconds += time.Since(t0).Seconds()
			if err := kept.keep(w); err != nil {
				return err
			}
		}
		res.BPD, res.Coarse, nfe = append(res.BPD, w.BPD...), append(res.Coarse, w.Coarse...), append(nfe, w.NFE)
		if !found {
			m, se := stats.MeanSE(res.BPD)
			fmt.Fprintf(log, "mnist-model: %d/%d images: %.4f ± %.4f bpd\n", b*want.Batch+len(w.BPD), cfg.Images, m, se)
		}
	}
	res.Batches = len(nfe)
	for _, e := range nfe {
		res.NFE += e
	}
	res.NFE /= max(1, len(nfe))
	res.LikelihoodMachine, _ = kept.where() // this machine is there once it kept a batch
	if cfg.Work == "" {
		res.LikelihoodMachine = workstore.Where([]string{mnist.Machine()}, []string{backend.Name()})
	}
	res.LikelihoodSeconds = readSeconds + seconds
	return nil
}

// likelihoodBatch computes batch b of the images x: their bpd at RTol and
// 10·RTol, and the model evaluations at RTol.
func (res *ModelEvalResult) likelihoodBatch(ctx context.Context, net *access.Net, trace score.TraceEstimator, x *mat.Dense,
	want likelihoodSettings, b int) (batchWork, error) {
	if err := ctx.Err(); err != nil {
		return batchWork{}, err
	}
	p := res.problem
	quant := quantization(p)
	lo := b * want.Batch
	rows := x.Slice(lo, lo+want.size(b), 0, p.Dim).(*mat.Dense)
	w := batchWork{Batch: b}
	for i, rtol := range []float64{want.RTol, 10 * want.RTol} {
		r, err := likelihood.LogProbContext(ctx, rows, access.NetModel{Net: net, Trace: trace}, likelihood.Config{Schedule: p.Schedule, RTol: rtol})
		if err != nil {
			return batchWork{}, err
		}
		bpd, err := likelihood.BitsPerDim(r.LogProb, p.Dim, &quant)
		if err != nil {
			return batchWork{}, err
		}
		if i == 0 {
			w.BPD, w.NFE = bpd, r.Evals
		} else {
			w.Coarse = bpd
		}
	}
	return w, nil
}
