package input

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by every refusal of a path that is not a regular
// file: a named pipe, a device, a socket or a folder.
var ErrNotRegular = errors.New("not a regular file")

// Every file dfx reads is opened with Open: a named pipe without a writer
// would block the open (and a read) forever, past any signal, and a device
// such as /dev/zero never ends, so only regular files are read — symbolic
// links to them included. Standard input ("-", where a command takes it)
// is the one stream. The check is made on the opened descriptor, without
// blocking (openRegular), so the file read is the file checked.

// Open opens path for reading if it is a regular file; anything else is an
// error naming the path and what it is, wrapping ErrNotRegular.
func Open(path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("empty file name")
	}
	return openRegular(path)
}

// ReadAll reads the regular file at path whole; a file larger than max
// bytes is refused from its size, before anything is read.
func ReadAll(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a file of this kind may have", path, st.Size(), max)
	}
	// The file may grow after the stat: read at most max+1 bytes.
	raw, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(raw)) > max {
		return nil, fmt.Errorf("%s: more than the %d bytes a file of this kind may have", path, max)
	}
	return raw, nil
}

// notRegular is the refusal of path, whose type is mode.
func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a folder"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	stream := mode&(fs.ModeNamedPipe|fs.ModeCharDevice) != 0
	return notRegularError{path, what, stream}
}

// notRegularError names the path and what it is; it is ErrNotRegular.
// stream marks a file that could be read as a stream (a named pipe, a
// character device such as /dev/stdin on a terminal or pipe), where the
// way to read it is "-" with the file as standard input.
type notRegularError struct {
	path, what string
	stream     bool
}

func (e notRegularError) Error() string {
	if e.stream {
		return fmt.Sprintf("%s is %s, not a regular file: dfx reads only regular files (use - to read standard input where the option takes it: - < %s)",
			e.path, e.what, e.path)
	}
	return fmt.Sprintf("%s is %s, not a regular file: dfx reads only regular files", e.path, e.what)
}

func (e notRegularError) Is(target error) bool { return target == ErrNotRegular }
