package toys

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/gomlx/compute"
	mlctx "github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// TrainConfig sizes the three networks and their training.
type TrainConfig struct {
	Width, Depth, EmbedDim int
	Steps, BatchSize       int
	LearningRate           float64
	EMADecay               float64
	LogEvery               int // loss curve resolution (mean over LogEvery steps)
}

// QuickTrain is small enough for CI.
func QuickTrain() TrainConfig {
	return TrainConfig{Width: 32, Depth: 2, EmbedDim: 16, Steps: 400, BatchSize: 256, LearningRate: 3e-3, EMADecay: 0.99, LogEvery: 10}
}

// FullTrain gives the published networks (checkpoints of ≈ 100 KB each).
func FullTrain() TrainConfig {
	return TrainConfig{Width: 64, Depth: 3, EmbedDim: 32, Steps: 8000, BatchSize: 256, LearningRate: 2e-3, EMADecay: 0.999, LogEvery: 50}
}

// LossCurve is the training loss of one network: Loss[i] is the mean batch
// loss over the LogEvery steps ending at Step[i].
type LossCurve struct {
	Net  string // "score" (DSM), "df-tm" or "df-tm-c" (centred, ours)
	Seed uint64
	models.LossCurve
}

func (tc TrainConfig) context(seed uint64) *mlctx.Store {
	ctx := models.NewStore()
	ctx.SetParams(map[string]any{
		models.ParamWidth: tc.Width, models.ParamDepth: tc.Depth, models.ParamEmbedDim: tc.EmbedDim,
		models.ParamBatchSize: tc.BatchSize, models.ParamLearningRate: tc.LearningRate,
		models.ParamWarmupSteps: min(100, tc.Steps/10), models.ParamCosineSteps: tc.Steps,
		models.ParamEMADecay: tc.EMADecay, models.ParamSeed: int(seed),
	})
	return ctx
}

// committedCheckpoints are the published toy networks, compiled in so that
// a run from any working directory finds them (and never silently retrains).
//
//go:embed checkpoints/*.dfxckpt
var committedCheckpoints embed.FS

// checkpointName is the file name of one network of cfg.
func checkpointName(cfg ProblemConfig, net string, seed uint64) string {
	tc := cfg.Train
	return fmt.Sprintf("%s-n%d-d%d-%s-%s-w%dx%d-s%d-seed%d.dfxckpt", cfg.Dataset, cfg.N, cfg.DataSeed, cfg.Schedule, net, tc.Width, tc.Depth, tc.Steps, seed)
}

// ObtainNetworks loads or trains the networks of cfg, one set per training
// seed, on data (cfg's points) with schedule sch.
func ObtainNetworks(ctx context.Context, cfg ProblemConfig, sch schedule.Schedule, data *mat.Dense, log io.Writer) (*Learned, error) {
	backend, err := models.NewBackend()
	if err != nil {
		return nil, fmt.Errorf("toys: backend: %w", err)
	}
	rows := make([][]float64, data.RawMatrix().Rows)
	for i := range rows {
		rows[i] = data.RawRowView(i)
	}
	res := &Learned{}
	trained, loaded := 0, 0
	for _, seed := range cfg.TrainSeeds {
		var ctxs [3]*mlctx.Store
		eps := "" // the score network's digest, which the DF-TM networks record and are checked against
		for k, obj := range []models.Objective{models.DSM, models.DFTM, models.DFTMCentred} {
			name := [3]string{"score", "df-tm", "df-tm-c"}[k]
			file := checkpointName(cfg, name, seed)
			var curve LossCurve
			if k > 0 && eps == "" {
				if eps, err = scoreDigest(ctxs[0]); err != nil {
					return nil, err
				}
			}
			if !cfg.Retrain && (cfg.Checkpoints != "" || cfg.Embedded) {
				c, cp, where, err := loadCheckpoint(cfg.Checkpoints, file, cfg.Embedded, cfg, sch, eps)
				if err == nil {
					ctxs[k], curve = c, cp.Curve
					loaded++
					fmt.Fprintf(log, "toys: loaded %s\n", where)
				} else if !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
			}
			if ctxs[k] == nil {
				start := time.Now()
				var base *mlctx.Store
				if obj == models.DFTMCentred { // its target needs the trained score network, frozen
					if base, err = mergeWeights(cfg.Train.context(seed), ctxs[0]); err != nil {
						return nil, err
					}
				}
				ctxs[k], curve, err = trainNetwork(ctx, backend, cfg.Train, sch, obj, base, rows, seed, name, log)
				if err != nil {
					return nil, err
				}
				trained++
				fmt.Fprintf(log, "toys: trained %s (seed %d) for %d steps in %.1fs, final loss %.4g\n", name, seed, cfg.Train.Steps, time.Since(start).Seconds(),
					curve.Loss[len(curve.Loss)-1])
				if cfg.Checkpoints != "" {
					if err := saveCheckpoint(filepath.Join(cfg.Checkpoints, file), cfg, sch, eps, curve, ctxs[k]); err != nil {
						return nil, err
					}
				}
			}
			res.Losses = append(res.Losses, curve)
		}
		merged, err := mergeWeights(cfg.Train.context(seed), ctxs[:]...)
		if err != nil {
			return nil, err
		}
		n, err := newNetworks(backend, sch, seed, merged)
		if err != nil {
			return nil, err
		}
		res.Nets = append(res.Nets, n)
	}
	res.Notes = fmt.Sprintf("%d networks trained, %d loaded from checkpoints", trained, loaded)
	return res, nil
}

// trainNetwork trains one network, starting from base (nil: an empty
// context of tc), and returns the context holding its EMA weights (for
// evaluation) and its loss curve.
func trainNetwork(ctx context.Context, backend compute.Backend, tc TrainConfig, sch schedule.Schedule, obj models.Objective, base *mlctx.Store,
	rows [][]float64, seed uint64, name string, log io.Writer) (*mlctx.Store, LossCurve, error) {
	curve := LossCurve{Net: name, Seed: seed}
	if base == nil {
		base = tc.context(seed)
	}
	tr, err := models.NewTrainer(backend, base, sch, obj, rows, nil)
	if err != nil {
		return nil, curve, fmt.Errorf("toys: %s network: %w", name, err)
	}
	progress := models.Hook{Every: 1000, Run: func(st models.LoopState) error {
		fmt.Fprintf(log, "toys: %s (seed %d) step %d/%d, loss %.4g, %.1f ms/step\n", name, seed, st.Step, tc.Steps, curve.Loss[len(curve.Loss)-1],
			1e3*st.Train.Seconds()/float64(st.Step))
		return nil
	}}
	loop := models.Loop{To: int64(tc.Steps), Curve: &curve.LossCurve, CurveEvery: int64(max(tc.LogEvery, 1)), Hooks: []models.Hook{progress}}
	if _, err := tr.Run(ctx, loop); err != nil {
		return nil, curve, fmt.Errorf("toys: %s network: %w", name, err)
	}
	ema, err := models.EMAStore(tr.Store)
	if err != nil {
		return nil, curve, err
	}
	return ema, curve, nil
}

// mergeWeights copies the trainable variables of each source into dst
// under the same scopes (the networks live under different scopes).
func mergeWeights(dst *mlctx.Store, srcs ...*mlctx.Store) (*mlctx.Store, error) {
	return dst, models.CopyTrainable(dst, srcs...)
}

// netScopes are the models scopes of the three networks, by name.
var netScopes = map[string]string{"score": models.ScoreScope, "df-tm": models.TraceScope, "df-tm-c": models.CentredTraceScope}

// savedConfig is the producer configuration a toy checkpoint records.
type savedConfig struct {
	Train TrainConfig
	Curve LossCurve
}

// toyProvenance is what a toy network of cfg records of its training
// (checkpoint.Provenance); eps is the digest of the score network a DF-TM or
// centred DF-TM network goes with ("" for the score network).
func toyProvenance(cfg ProblemConfig, eps string) checkpoint.Provenance {
	return checkpoint.Provenance{Data: fmt.Sprintf("toys %s: n=%d, data seed %d", cfg.Dataset, cfg.N, cfg.DataSeed),
		Scaling: "none (as Generators draws it)", Dequantize: "none", EpsNetwork: eps}
}

// scoreDigest is the digest of the score network in store, as its
// checkpoint would record it.
func scoreDigest(store *mlctx.Store) (string, error) {
	c, err := checkpoint.Weights(store, 2, []string{models.ScoreScope}, nil)
	if err != nil {
		return "", fmt.Errorf("toys: score network: %w", err)
	}
	return checkpoint.Digest(c, models.ScoreScope)
}

// saveCheckpoint stores the evaluation weights of the named network in
// store (already EMA) in models' checkpoint format, with cfg.Train, its
// curve and its provenance (schedule sch, cfg's data, eps for the DF-TM
// networks).
func saveCheckpoint(path string, cfg ProblemConfig, sch schedule.Schedule, eps string, curve LossCurve, store *mlctx.Store) error {
	raw, err := json.Marshal(savedConfig{cfg.Train, curve})
	if err != nil {
		return err
	}
	c, err := checkpoint.Weights(store, 2, []string{netScopes[curve.Net]}, raw)
	if err != nil {
		return fmt.Errorf("toys: checkpoint %s: %w", path, err)
	}
	if curve.Net == "score" {
		eps = ""
	}
	if err := checkpoint.Stamp(c, sch, toyProvenance(cfg, eps)); err != nil {
		return fmt.Errorf("toys: checkpoint %s: %w", path, err)
	}
	return c.Write(path)
}

// loadCheckpoint reads a toy network: from the folder dir when it holds the
// file, else (embedded true) from the checkpoints compiled into the binary;
// fs.ErrNotExist when neither has it. A checkpoint made with another
// TrainConfig, schedule (sch) or data set than cfg's, a DF-TM network made
// for another score network than the one of digest eps, or one failing
// models' strict checks, is an error.
func loadCheckpoint(dir, name string, embedded bool, cfg ProblemConfig, sch schedule.Schedule, eps string) (*mlctx.Store, *savedConfig, string, error) {
	tc := cfg.Train
	var raw []byte
	var err error
	where := filepath.Join(dir, name)
	if dir != "" {
		raw, err = checkpoint.ReadBytes(where)
	}
	if dir == "" || (errors.Is(err, fs.ErrNotExist) && embedded) {
		if !embedded {
			return nil, nil, "", fs.ErrNotExist
		}
		where = "embedded:toys/checkpoints/" + name
		raw, err = committedCheckpoints.ReadFile("checkpoints/" + name)
	}
	if err != nil {
		return nil, nil, "", err
	}
	c, err := checkpoint.Decode(raw, where)
	if err != nil {
		return nil, nil, "", err
	}
	var cp savedConfig
	dec := json.NewDecoder(bytes.NewReader(c.Header.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cp); err != nil {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s: configuration: %v: %w", where, err, checkpoint.ErrInvalid)
	}
	if cp.Train != tc {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s was trained with %+v, config asks for %+v (retrain): %w", where, cp.Train, tc, checkpoint.ErrInvalid)
	}
	if want := netScopes[cp.Curve.Net]; len(c.Header.Networks) != 1 || c.Header.Networks[0] != want || want == "" {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s holds networks %v for net %q: %w", where, c.Header.Networks, cp.Curve.Net, checkpoint.ErrInvalid)
	}
	if p := c.Header.Provenance; p == nil {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s: %w: %w", where, checkpoint.ErrNoProvenance, checkpoint.ErrInvalid)
	}
	if err := checkpoint.CheckSchedule(c, sch); err != nil {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s: %w", where, err)
	}
	if cp.Curve.Net == "score" {
		eps = ""
	}
	want := toyProvenance(cfg, eps)
	if p := c.Header.Provenance; p.Data != want.Data || p.Scaling != want.Scaling || p.Dequantize != want.Dequantize {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s was trained on %q, config asks for %q (retrain): %w", where, p.Data, want.Data, checkpoint.ErrInvalid)
	}
	if p := c.Header.Provenance; p.EpsNetwork != eps {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s was made for the score network %.12s…, this one is "+
			"%.12s… (use the networks trained together): %w", where, p.EpsNetwork, eps, checkpoint.ErrInvalid)
	}
	store, err := checkpoint.LoadWeights(c)
	if err != nil {
		return nil, nil, "", fmt.Errorf("toys: checkpoint %s: %w", where, err)
	}
	return store, &cp, where, nil
}
