package models

import (
	"os"
	"sync"

	"github.com/gomlx/compute"
	_ "github.com/gomlx/compute/gobackend" // the Go backend ("go"), SIMD kernels with GOEXPERIMENT=simd
)

// Go-backend configurations used when GOMLX_BACKEND is unset. See
// DefaultBackendConfig's comment in backendconfig.go for why.
const (
	DefaultBackendConfig = "go:" + goBackendOptions
	TrainBackendConfig   = "go:" + goBackendOptions
)

// NewBackend returns the backend named by GOMLX_BACKEND (e.g. "xla:cuda"
// with -tags xla, or "go:parallelism=2"), or the Go backend with
// DefaultBackendConfig.
func NewBackend() (compute.Backend, error) { return newBackend(DefaultBackendConfig) }

// NewTrainBackend is NewBackend with TrainBackendConfig, for training.
func NewTrainBackend() (compute.Backend, error) { return newBackend(TrainBackendConfig) }

var warnOnce sync.Once

func newBackend(config string) (compute.Backend, error) {
	warnOnce.Do(warnWithoutSIMD)
	if os.Getenv("GOMLX_BACKEND") != "" {
		return compute.New()
	}
	return compute.NewWithConfig(config)
}

// MustNewBackend is NewBackend that panics on error.
func MustNewBackend() compute.Backend { return must(NewBackend()) }

// MustNewTrainBackend is NewTrainBackend that panics on error.
func MustNewTrainBackend() compute.Backend { return must(NewTrainBackend()) }

func must(b compute.Backend, err error) compute.Backend {
	if err != nil {
		panic(err)
	}
	return b
}
