//go:build unix

package input

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRefusesWhatIsNotARegularFileWithoutBlocking: a named pipe with no
// writer, a device, a socket and a folder are each refused at once, with
// the path and what it is; a symbolic link to a regular file is read, and
// a missing file stays fs.ErrNotExist.
func TestOpenRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	sock := filepath.Join(dir, "s.sock")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
	} else {
		sock = ""
	}
	cases := map[string]string{fifo: "named pipe", "/dev/zero": "character device", dir: "folder"}
	if sock != "" {
		cases[sock] = "socket"
	}
	for path, what := range cases {
		done := make(chan error, 1)
		go func() {
			_, err := ReadAll(path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), what) {
				t.Errorf("%s: got %v, want ErrNotRegular naming the path and %q", path, err, what)
			}
			// a pipe or a device is read as standard input: the refusal says so
			stream := what == "named pipe" || what == "character device"
			if err != nil && strings.Contains(err.Error(), "use - to read standard input") != stream {
				t.Errorf("%s: got %v; want the hint at - only for a named pipe or a character device", path, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: reading it blocked", path)
		}
	}
	real := filepath.Join(dir, "real.csv")
	if err := os.WriteFile(real, []byte("1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadFile(link, Options{}); err != nil || m.At(0, 1) != 2 {
		t.Errorf("a link to a regular file: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := ReadAll(real, 2); err == nil {
		t.Error("a file over the bound was read")
	}
}
