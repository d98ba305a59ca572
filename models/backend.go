package models

import (
	"os"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // pure-Go default backend
)

// Pure-Go backend configurations used when GOMLX_BACKEND is unset.
//
// Both run ops one at a time ("ops_sequential"; each op still uses every
// core): GoMLX v0.26.0's parallel op scheduler can deadlock on a 2-core
// machine when a parallel DotGeneral waits for workers held by other ops, and
// sequential execution measured faster anyway (1024×128·128×128: 3.4 ms vs 6.6 ms).
//
// TrainBackendConfig also forces the blocked ("large") matrix-product
// kernel: the weight gradient xᵀ·v contracts over the batch into a small
// output, which simplego's size heuristic sends to its slow generic kernel
// (1024-row contraction into 128×128: 12 ms generic vs 4 ms blocked; a training
// step runs ≈ 2× faster). For inference on a few rows the blocked kernel pads
// rows up to its block size, so DefaultBackendConfig keeps the heuristic.
const (
	DefaultBackendConfig = "go:ops_sequential"
	TrainBackendConfig   = "go:ops_sequential,dotgeneral_large"
)

// NewBackend returns the backend named by GOMLX_BACKEND (e.g. "xla:cuda"),
// or the pure-Go DefaultBackendConfig.
func NewBackend() (backends.Backend, error) { return newBackend(DefaultBackendConfig) }

// NewTrainBackend is NewBackend with TrainBackendConfig, for training.
func NewTrainBackend() (backends.Backend, error) { return newBackend(TrainBackendConfig) }

func newBackend(config string) (backends.Backend, error) {
	if os.Getenv("GOMLX_BACKEND") != "" {
		return backends.New()
	}
	return backends.NewWithConfig(config)
}

// MustNewBackend is NewBackend that panics on error.
func MustNewBackend() backends.Backend { return must(NewBackend()) }

// MustNewTrainBackend is NewTrainBackend that panics on error.
func MustNewTrainBackend() backends.Backend { return must(NewTrainBackend()) }

func must(b backends.Backend, err error) backends.Backend {
	if err != nil {
		panic(err)
	}
	return b
}
