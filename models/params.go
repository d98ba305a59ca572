// Package models holds dfx's score networks: a residual MLP with a Fourier
// noise-level embedding and optional class conditioning (with a null class for
// classifier-free guidance), its ε / y (= x̂₀) / v output parameterisations and
// exact conversions to the score, denoising-score-matching training (paper
// eq. dpm_objective) and the scalar DF-TM network (paper Algorithm tnet).
// A score network may also be an ONNX graph (ArchONNX), which the
// subpackage onnximport imports. Their file format is the subpackage
// checkpoint, which builds on this one.
//
// Hyperparameters live in a GoMLX model.Store (root-scope parameters);
// SetDefaults writes every default in one place. Graph builders take the
// *model.Scope they create their variables under.
package models

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
)

// Values of ParamWeightLayout.
const (
	LayoutInOut = "in-out" // W [in, out], y = x·W: the networks trained before the layout existed
	LayoutOutIn = "out-in" // W [out, in], y = x·Wᵀ: no transpose in the weight gradient
)

// Hyperparameter keys read from the store (root scope).
const (
	ParamDType        = "dtype"            // "float32" or "float64"
	ParamWidth        = "width"            // hidden width of the residual MLP
	ParamDepth        = "depth"            // number of residual blocks
	ParamActivation   = "activation"       // "silu", "tanh", "relu", "softplus"
	ParamEmbedDim     = "embed_dim"        // Fourier features of the noise level (even)
	ParamEmbedMaxFreq = "embed_max_freq"   // largest angular frequency of the embedding
	ParamNumClasses   = "num_classes"      // 0: unconditional; else K classes plus null class K
	ParamParam        = "parameterisation" // "eps", "y" or "v"
	ParamWeighting    = "weighting"        // DSM weighting: "eps", "y", "v", "min-snr"
	ParamMinSNRGamma  = "min_snr_gamma"    // γ of the min-SNR weighting
	ParamCFGDropout   = "cfg_dropout"      // probability of training with the null class
	ParamLearningRate = "learning_rate"
	ParamWeightDecay  = "weight_decay" // AdamW decoupled weight decay (0: Adam)
	ParamWarmupSteps  = "warmup_steps" // linear warm-up of the learning rate
	ParamCosineSteps  = "cosine_steps" // cosine decay to 0 over this many steps (0: constant)
	ParamClipNorm     = "clip_norm"    // global gradient-norm clip (0: none)
	ParamEMADecay     = "ema_decay"    // EMA of weights (0: none)
	ParamBatchSize    = "batch_size"
	ParamTimeSampling = "time_sampling" // "uniform" in t, "log-sigma": log σ uniform (VE, EDM), "log-snr": log(α/σ) uniform (likelihood weighting)
	ParamSeed         = "seed"          // initial weights and training randomness
	ParamWeightLayout = "weight_layout" // new Dense weights: LayoutOutIn; absent: LayoutInOut (see Dense)
	// The three below are absent from SetDefaults (absent means the
	// default), so the committed networks' digests stay as they were.
	ParamSkip              = "skip"               // SkipNone, or SkipMixture: ε̂ = ε_mix + network (SetMixtureSkip)
	ParamArch              = "arch"               // ArchMLP (ResidualMLP), ArchFiLM (FiLMMLP), ArchPatch (PatchNet) or ArchONNX (imported)
	ParamPatch             = "patch"              // PatchNet: side of the square patches, in pixels (default 4)
	ParamPatchHalo         = "patch_halo"         // PatchNet: neighbouring patches each patch sees on every side (default 1)
	ParamMixtureComponents = "mixture_components" // K of the mixture skip (set by SetMixtureSkip)
	ParamMixtureRank       = "mixture_rank"       // rank r of each of its covariances
	ParamEmbedWidth        = "embed_width"        // FiLM: features of the time/class embedding (absent: the width)
	// t_θ, ν_θ: the mixture skip's exact value plus a zero-initialised residual (needs the
	// ε-network's mixture skip; set it scoped, /dftm/trace_skip and /nu/trace_skip).
	ParamTraceSkip  = "trace_skip"
	ParamZeroBias   = "zero_bias"  // Dense biases start at zero (absent/false: GoMLX's He initialiser, N(0, 2) for a [1, out] bias)
	ParamDequantize = "dequantize" // width of one quantisation level added as uniform noise to x₀ (0: none)
)

// SetDefaults writes every hyperparameter's default into the store's root
// scope. Override after calling it, e.g. store.SetParam(models.ParamWidth, 256).
func SetDefaults(store *model.Store) {
	store.SetParams(map[string]any{
		ParamDType:        "float32",
		ParamWidth:        128,
		ParamDepth:        3,
		ParamActivation:   "silu",
		ParamEmbedDim:     32,
		ParamEmbedMaxFreq: 8.0,
		ParamNumClasses:   0,
		ParamParam:        "eps",
		ParamWeighting:    "eps",
		ParamMinSNRGamma:  5.0,
		ParamCFGDropout:   0.1,
		ParamLearningRate: 1e-3,
		ParamWeightDecay:  0.0,
		ParamWarmupSteps:  0,
		ParamCosineSteps:  0,
		ParamClipNorm:     1.0,
		ParamEMADecay:     0.999,
		ParamBatchSize:    256,
		ParamTimeSampling: "uniform",
		ParamSeed:         1,
		ParamWeightLayout: LayoutOutIn,
	})
}

// NewStore returns a fresh store with the defaults set.
func NewStore() *model.Store {
	store := model.NewStore()
	SetDefaults(store)
	return store
}

// DTypeOf reads ParamDType.
func DTypeOf(store *model.Store) (dtypes.DType, error) {
	switch s := model.GetRootParamOr(store, ParamDType, "float32"); s {
	case "float32":
		return dtypes.Float32, nil
	case "float64":
		return dtypes.Float64, nil
	default:
		return dtypes.InvalidDType, fmt.Errorf("models: dtype %q, want float32 or float64", s)
	}
}
