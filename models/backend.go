package models

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
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

// ErrBackend is wrapped by the errors about a GOMLX_BACKEND value that
// names no backend of this build or that its backend refuses.
var ErrBackend = errors.New("unusable backend")

// newBackend creates the backend of GOMLX_BACKEND, else of config. GoMLX
// panics on a backend name it does not know: that is checked first, and
// any other panic of the backend's creation is returned as an error.
func newBackend(config string) (b compute.Backend, err error) {
	warnOnce.Do(warnWithoutSIMD)
	env := os.Getenv("GOMLX_BACKEND")
	if env != "" {
		config = env
		name, _, _ := strings.Cut(env, ":")
		have := compute.List()
		sort.Strings(have)
		if !slices.Contains(have, name) {
			hint := ""
			if name == "xla" {
				hint = "; xla needs a build with -tags xla (see scripts/gpu-xla.sh)"
			}
			return nil, fmt.Errorf("GOMLX_BACKEND=%q: this build has no backend %q (it has %s)%s: %w", env, name, strings.Join(have, ", "), hint, ErrBackend)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("backend %q: %v: %w", config, r, ErrBackend)
		}
	}()
	b, err = compute.NewWithConfig(config)
	if err != nil {
		if env != "" {
			return nil, fmt.Errorf("GOMLX_BACKEND=%q: %v: %w", env, err, ErrBackend)
		}
		return nil, fmt.Errorf("backend %q: %w", config, err)
	}
	return b, nil
}

// CheckBackend creates the backend NewBackend would and releases it: a
// command calls it before any long work, so that a bad GOMLX_BACKEND is
// reported at once.
func CheckBackend() error {
	b, err := NewBackend()
	if err != nil {
		return err
	}
	b.Finalize()
	return nil
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
