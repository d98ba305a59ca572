//go:build unix && !solaris && !aix

package worklock

import (
	"errors"
	"os"
	"syscall"
)

// Supported says whether this platform locks files (flock(2)).
const Supported = true

const platform = "flock"

var errWouldBlock = syscall.EWOULDBLOCK

// lockFile takes f's exclusive flock without waiting.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// unsupported reports a filesystem that cannot flock.
func unsupported(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL)
}
