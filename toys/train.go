package toys

import (
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/models"
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
	Step []int
	Loss []float64
}

func (tc TrainConfig) context(seed uint64) *mlctx.Context {
	ctx := models.NewContext()
	ctx.SetParams(map[string]any{
		models.ParamWidth: tc.Width, models.ParamDepth: tc.Depth, models.ParamEmbedDim: tc.EmbedDim,
		models.ParamBatchSize: tc.BatchSize, models.ParamLearningRate: tc.LearningRate,
		models.ParamWarmupSteps: min(100, tc.Steps/10), models.ParamCosineSteps: tc.Steps,
		models.ParamEMADecay: tc.EMADecay, models.ParamSeed: int(seed),
	})
	return ctx
}

// checkpoint is what a saved network file holds.
type checkpoint struct {
	Train TrainConfig
	Curve LossCurve
	Vars  []savedVar
}

type savedVar struct {
	Scope, Name string
	Dims        []int
	Data        []float32
}

func checkpointPath(cfg Config, net string, seed uint64) string {
	tc := cfg.Train
	name := fmt.Sprintf("%s-n%d-d%d-%s-%s-w%dx%d-s%d-seed%d.gob.gz", cfg.Dataset, cfg.N, cfg.DataSeed, cfg.Schedule, net, tc.Width, tc.Depth, tc.Steps, seed)
	return filepath.Join(cfg.Checkpoints, name)
}

// obtainNetworks loads or trains one network pair per training seed.
func obtainNetworks(ctx context.Context, cfg Config, sch schedule.Schedule, data *mat.Dense, res *Result, log io.Writer) ([]*Networks, error) {
	backend, err := models.NewBackend()
	if err != nil {
		return nil, fmt.Errorf("toys: backend: %w", err)
	}
	rows := make([][]float64, data.RawMatrix().Rows)
	for i := range rows {
		rows[i] = data.RawRowView(i)
	}
	var nets []*Networks
	trained, loaded := 0, 0
	for _, seed := range cfg.TrainSeeds {
		var ctxs [3]*mlctx.Context
		for k, obj := range []models.Objective{models.DSM, models.DFTM, models.DFTMCentred} {
			name := [3]string{"score", "df-tm", "df-tm-c"}[k]
			path := ""
			if cfg.Checkpoints != "" {
				path = checkpointPath(cfg, name, seed)
			}
			var curve LossCurve
			if path != "" && !cfg.Retrain {
				c, cp, err := loadCheckpoint(path, cfg.Train, seed)
				if err == nil {
					ctxs[k], curve = c, cp.Curve
					loaded++
					fmt.Fprintf(log, "toys: loaded %s\n", path)
				} else if !errors.Is(err, fs.ErrNotExist) {
					return nil, err
				}
			}
			if ctxs[k] == nil {
				start := time.Now()
				var base *mlctx.Context
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
				fmt.Fprintf(log, "toys: trained %s (seed %d) for %d steps in %.1fs, final loss %.4g\n", name, seed, cfg.Train.Steps, time.Since(start).Seconds(), curve.Loss[len(curve.Loss)-1])
				if path != "" {
					if err := saveCheckpoint(path, cfg.Train, curve, ctxs[k]); err != nil {
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
		nets = append(nets, n)
	}
	res.NetsNotes = fmt.Sprintf("%d networks trained, %d loaded from checkpoints", trained, loaded)
	return nets, nil
}

// trainNetwork trains one network, starting from base (nil: an empty
// context of tc), and returns the context holding its EMA weights (for
// evaluation) and its loss curve.
func trainNetwork(ctx context.Context, backend backends.Backend, tc TrainConfig, sch schedule.Schedule, obj models.Objective, base *mlctx.Context, rows [][]float64, seed uint64, name string, log io.Writer) (*mlctx.Context, LossCurve, error) {
	start := time.Now()
	curve := LossCurve{Net: name, Seed: seed}
	if base == nil {
		base = tc.context(seed)
	}
	tr, err := models.NewTrainer(backend, base, sch, obj, rows, nil)
	if err != nil {
		return nil, curve, fmt.Errorf("toys: %s network: %w", name, err)
	}
	every := max(tc.LogEvery, 1)
	sum, count := 0.0, 0
	for step := 1; step <= tc.Steps; step++ {
		if step%100 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, curve, err
			}
		}
		loss, err := tr.TrainSteps(1)
		if err != nil {
			return nil, curve, fmt.Errorf("toys: %s network: %w", name, err)
		}
		sum += loss
		count++
		if count == every || step == tc.Steps {
			curve.Step = append(curve.Step, step)
			curve.Loss = append(curve.Loss, sum/float64(count))
			sum, count = 0, 0
		}
		if step%1000 == 0 {
			fmt.Fprintf(log, "toys: %s (seed %d) step %d/%d, loss %.4g, %.1f ms/step\n", name, seed, step, tc.Steps, curve.Loss[len(curve.Loss)-1], 1e3*time.Since(start).Seconds()/float64(step))
		}
	}
	ema, err := models.EMAContext(tr.Ctx)
	if err != nil {
		return nil, curve, err
	}
	return ema, curve, nil
}

// mergeWeights copies the trainable variables of each source into dst
// under the same scopes (the two networks live under different scopes).
func mergeWeights(dst *mlctx.Context, srcs ...*mlctx.Context) (*mlctx.Context, error) {
	for _, src := range srcs {
		for v := range src.IterVariables() {
			if !v.Trainable {
				continue
			}
			val, err := v.Value()
			if err != nil {
				return nil, err
			}
			clone, err := val.LocalClone()
			if err != nil {
				return nil, err
			}
			dst.InAbsPath(v.Scope()).Checked(false).VariableWithValue(v.Name(), clone)
		}
	}
	return dst, nil
}

// saveCheckpoint stores the trainable (evaluation) weights of ctx.
func saveCheckpoint(path string, tc TrainConfig, curve LossCurve, ctx *mlctx.Context) error {
	cp := checkpoint{Train: tc, Curve: curve}
	for v := range ctx.IterVariables() {
		if !v.Trainable {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return err
		}
		data, err := tensors.CopyFlatData[float32](val)
		if err != nil {
			return fmt.Errorf("toys: checkpoint %s: %w", v.ScopeAndName(), err)
		}
		cp.Vars = append(cp.Vars, savedVar{Scope: v.Scope(), Name: v.Name(), Dims: v.Shape().Dimensions, Data: data})
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		zw := gzip.NewWriter(w)
		if err := gob.NewEncoder(zw).Encode(cp); err != nil {
			return err
		}
		return zw.Close()
	})
}

// maxCheckpointBytes bounds a toy checkpoint's uncompressed size (the toy
// networks are well under 1 MB).
const maxCheckpointBytes = 64 << 20

// loadCheckpoint rebuilds a context with the saved weights; a checkpoint
// made with another TrainConfig is an error.
func loadCheckpoint(path string, tc TrainConfig, seed uint64) (*mlctx.Context, *checkpoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("toys: checkpoint %s: %w", path, err)
	}
	var cp checkpoint
	// Bound what a corrupt or hostile file can make us allocate.
	lr := &io.LimitedReader{R: zr, N: maxCheckpointBytes + 1}
	if err := gob.NewDecoder(lr).Decode(&cp); err != nil {
		if lr.N <= 0 {
			return nil, nil, fmt.Errorf("toys: checkpoint %s: larger than %d bytes uncompressed", path, maxCheckpointBytes)
		}
		return nil, nil, fmt.Errorf("toys: checkpoint %s: %w", path, err)
	}
	for _, v := range cp.Vars {
		n := 1
		for _, d := range v.Dims {
			if d < 1 || d > maxCheckpointBytes/4 {
				return nil, nil, fmt.Errorf("toys: checkpoint %s: variable %s/%s has dimension %d", path, v.Scope, v.Name, d)
			}
			n *= d
			if n > maxCheckpointBytes/4 {
				return nil, nil, fmt.Errorf("toys: checkpoint %s: variable %s/%s is too large", path, v.Scope, v.Name)
			}
		}
		if n != len(v.Data) {
			return nil, nil, fmt.Errorf("toys: checkpoint %s: variable %s/%s has %d values for shape %v", path, v.Scope, v.Name, len(v.Data), v.Dims)
		}
	}
	if cp.Train != tc {
		return nil, nil, fmt.Errorf("toys: checkpoint %s was trained with %+v, config asks for %+v (retrain)", path, cp.Train, tc)
	}
	ctx := tc.context(seed)
	for _, v := range cp.Vars {
		ctx.InAbsPath(v.Scope).VariableWithValue(v.Name, tensors.FromFlatDataAndDimensions(v.Data, v.Dims...))
	}
	return ctx, &cp, nil
}
