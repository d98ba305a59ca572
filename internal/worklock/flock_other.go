//go:build !unix || solaris || aix

package worklock

import (
	"errors"
	"os"
	"runtime"
)

// Supported says whether this platform locks files: not here (no flock),
// so Acquire returns ErrUnsupported and runs are not kept apart.
const Supported = false

const platform = "no flock on " + runtime.GOOS

var errWouldBlock = errors.New("would block")

func lockFile(*os.File) error    { return ErrUnsupported }
func unsupported(err error) bool { return true }
