//go:build xla

package models

// Built with -tags xla (cgo), the XLA backend is linked in as well, and
// GOMLX_BACKEND=xla:cuda (or xla:cpu) selects it where a PJRT plugin is
// installed; see scripts/gpu-xla.sh.
import _ "github.com/gomlx/go-xla/compute/xla"
