//go:build unix

package input

import (
	"errors"
	"os"
	"syscall"
)

// openRegular opens path without blocking (O_NONBLOCK: a named pipe without
// a writer opens at once instead of waiting for one), checks the opened
// descriptor's type, and only then makes it blocking again for the reads.
func openRegular(path string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		if errors.Is(err, syscall.ENXIO) { // a socket, or a device without its driver
			if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
				return nil, notRegular(path, st.Mode())
			}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if kind := uint32(st.Mode) & syscall.S_IFMT; kind != syscall.S_IFREG {
		syscall.Close(fd)
		return nil, notRegular(path, modeOf(kind))
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// modeOf is the fs.FileMode type bits of a stat's S_IFMT bits.
func modeOf(kind uint32) os.FileMode {
	switch kind {
	case syscall.S_IFDIR:
		return os.ModeDir
	case syscall.S_IFIFO:
		return os.ModeNamedPipe
	case syscall.S_IFSOCK:
		return os.ModeSocket
	case syscall.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	case syscall.S_IFBLK:
		return os.ModeDevice
	}
	return os.ModeIrregular
}
