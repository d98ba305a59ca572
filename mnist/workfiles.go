package mnist

import (
	"path/filepath"

	"github.com/dfx-lab/dfx/internal/workstore"
)

// ErrWork is wrapped by every error about a work or state folder whose
// files are malformed, were made for other settings, or are in use by
// another run (internal/workstore's).
var ErrWork = workstore.ErrWork

// CheckTrainFree is an error (ErrWork) while another run trains the
// network name into the state folder dir (TrainNetwork's lock), so that
// `dfx train` says so before it looks at the saved state.
func CheckTrainFree(dir, name string) error {
	return workstore.Probe("train "+name, dir, filepath.Base(statePath(dir, name)), statePath(dir, name))
}
