// Package outfile is dfx's one policy for the files it writes (sample's
// -png and -npy, fit's -out, train's checkpoints and the folders of
// reproduce -out and the work stores): dfx
// writes only a regular file that is new or that it wrote itself as the
// same kind of output, never through a device node, FIFO or symbolic link,
// never over a file tracked by git, and never into a Go package's source
// folder. Check says so before any work; WriteAll writes a command's
// outputs together or not at all, and a failure never removes what was
// there before.
package outfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/input"
)

// ErrRefused is wrapped by every error about an output dfx must not write.
var ErrRefused = errors.New("output refused")

// refusal is an error about an output dfx must not write: its message as
// given, and errors.Is(err, ErrRefused).
type refusal struct{ msg string }

func (r refusal) Error() string        { return r.msg }
func (r refusal) Is(target error) bool { return target == ErrRefused }

// refuse makes a refusal from a format and its arguments.
func refuse(format string, args ...any) error { return refusal{fmt.Sprintf(format, args...)} }

// Owned reports nil when the existing regular file at path is an output
// that the command asking may replace: one dfx wrote as the same kind of
// output (a PNG or .npy with dfx's marker, a checkpoint with the producer
// the command writes), and an error saying what it is otherwise.
type Owned func(path string) error

// Check reports whether dfx may write the file path, replacing it only if
// owned says it may (nil: never replace an existing file). It is meant to
// run before any work, and again just before writing (WriteAll does).
func Check(path string, owned Owned) error {
	if path == "" {
		return refuse("no output file named")
	}
	if path == "-" {
		return refuse("%q: dfx writes its outputs to files, not to standard output; give a file name", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return refuse("%s: cannot write it, its folder does not exist (%s)", path, dir)
	}
	if err := checkNotInPackage(dir); err != nil {
		return refuse("%s: %v", path, err)
	}
	if err := checkExisting(path, owned); err != nil {
		return err
	}
	if err := checkWritable(dir); err != nil {
		return refuse("%s: %v", path, err)
	}
	return nil
}

// CheckFolderFor reports whether dfx may make the folder dir (if missing)
// and write into it: its nearest existing folder (dir itself, or a parent)
// passes CheckFolder.
func CheckFolderFor(dir string) error {
	d := filepath.Clean(dir)
	for {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		d = filepath.Dir(d)
	}
	return CheckFolder(d)
}

// CheckFolder reports whether dfx may write new files into the existing
// folder dir: a writable folder outside any package's source folders.
func CheckFolder(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return refuse("%s is not an existing folder", dir)
	}
	if err := checkNotInPackage(dir); err != nil {
		return err
	}
	return checkWritable(dir)
}

// checkExisting applies the policy to what is at path now, if anything.
func checkExisting(path string, owned Owned) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // a new file
	case err != nil:
		return refuse("%s: %v", path, err)
	case st.IsDir():
		return refuse("%s is a folder: give a file name", path)
	case st.Mode()&fs.ModeSymlink != 0:
		return refuse("%s is a symbolic link: dfx replaces only regular files it wrote; name the file itself or a new one", path)
	case !st.Mode().IsRegular():
		return refuse("%s is a %s, not a regular file: dfx writes only regular files", path, kind(st.Mode()))
	}
	switch tracked, err := committed(path); {
	case err != nil:
		return refuse("%s exists and %v: dfx never overwrites a committed file", path, err)
	case tracked:
		return refuse("%s is tracked by git: dfx never overwrites a committed file; write elsewhere and copy it over by hand if that is meant", path)
	case owned == nil:
		return refuse("%s exists: dfx does not replace it; move it away or choose another name", path)
	default:
		if err := owned(path); err != nil {
			return refuse("%s exists and dfx did not write it as this kind of output (%v): move it away or choose another name"+
				" (files dfx wrote before it marked its outputs count as not its own)", path, err)
		}
	}
	return nil
}

// kind names a file mode that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	default:
		return "special file (" + m.Type().String() + ")"
	}
}

// checkWritable creates and removes a temporary file in dir, so that a
// read-only or full file system is found before the work.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".dfx-write-check-*")
	if err != nil {
		return refuse("cannot write into %s: %v", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// checkNotInPackage refuses a Go package's source folder: one that holds
// .go files, or a testdata folder (or one below it) of a package. Other
// folders of a module — its root beside go.mod, data and output folders —
// are fine.
func checkNotInPackage(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return refuse("%v", err)
	}
	if holdsGo(abs) {
		return refuse("%s holds Go source files: dfx never writes into a package's source folder", dir)
	}
	for d := abs; ; {
		up := filepath.Dir(d)
		if up == d {
			return nil
		}
		if filepath.Base(d) == "testdata" && holdsGo(up) {
			return refuse("%s is in the test data of the Go package %s: dfx never writes into a package's source folders", dir, up)
		}
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return nil // the module's root: above it is another project
		}
		d = up
	}
}

// holdsGo reports whether dir holds a .go file.
func holdsGo(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			return true
		}
	}
	return false
}

// committed reports whether git tracks the file path. Where git cannot
// answer inside a repository (not installed, a repository it refuses, a
// timeout) that is an error: dfx does not guess; outside a repository
// nothing is committed.
func committed(path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", filepath.Dir(abs), "ls-files", "-z", "--", filepath.Base(abs))
	out, err := cmd.Output()
	if err == nil {
		return len(out) > 0, nil
	}
	if repo := repositoryAbove(filepath.Dir(abs)); repo != "" {
		return false, fmt.Errorf("cannot tell whether git tracks it (the repository %s: %v)", repo, err)
	}
	return false, nil
}

// repositoryAbove is the nearest folder at or above dir holding .git, or "".
func repositoryAbove(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// rename is os.Rename; tests make it fail.
var rename = os.Rename

// File is one output of a command: its path, its bytes and which existing
// file it may replace (see Check).
type File struct {
	Path  string
	Data  []byte
	Owned Owned
}

// WriteAll writes files together or not at all. Each is checked again
// (Check) and staged in a synced temporary file beside its target; then
// the targets are replaced in turn, each previous file kept as a hard link
// until all are in place. If a step fails, the outputs already renamed get
// their previous contents back (or are removed where there was none), so
// a failure never removes what was there before.
func WriteAll(files []File) (err error) {
	for _, f := range files {
		if err := Check(f.Path, f.Owned); err != nil {
			return err
		}
	}
	staged := make([]string, len(files))
	defer func() {
		for _, t := range staged {
			if t != "" {
				_ = os.Remove(t)
			}
		}
	}()
	for i, f := range files {
		data := f.Data
		tmp, err := atomicfile.Stage(f.Path, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		})
		if err != nil {
			return err
		}
		staged[i] = tmp
	}
	type done struct{ path, backup string }
	var placed []done
	defer func() {
		for _, d := range placed {
			switch {
			case err != nil && d.backup != "":
				if rerr := rename(d.backup, d.path); rerr != nil {
					err = fmt.Errorf("%w; and putting back %s failed (%v): its previous contents are in %s", err, d.path, rerr, d.backup)
				}
			case err != nil:
				_ = os.Remove(d.path)
			case d.backup != "":
				_ = os.Remove(d.backup)
			}
		}
	}()
	for i, f := range files {
		d := done{path: f.Path}
		if _, statErr := os.Lstat(f.Path); statErr == nil {
			if d.backup, err = keep(f.Path); err != nil {
				return fmt.Errorf("keeping %s until the new outputs are in place: %w", f.Path, err)
			}
		}
		if err = rename(staged[i], f.Path); err != nil {
			if d.backup != "" {
				_ = os.Remove(d.backup)
			}
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		staged[i] = ""
		placed = append(placed, d)
	}
	return nil
}

// keep makes a second name for the existing file path (a hard link, or a
// copy where the file system has none), to put back if a later output
// fails. Its name is not a temporary file's, so no later write's clean-up
// removes it while it may be the only copy.
func keep(path string) (string, error) {
	backup := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".dfx-previous-p"+strconv.Itoa(os.Getpid()))
	_ = os.Remove(backup)
	if os.Link(path, backup) == nil {
		return backup, nil
	}
	src, err := input.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	tmp, err := atomicfile.Stage(path, func(w io.Writer) error { _, err := io.Copy(w, src); return err })
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, backup); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return backup, nil
}
