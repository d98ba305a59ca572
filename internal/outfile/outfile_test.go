package outfile

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/input"
)

// write makes a file with content under dir and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func allow(string) error { return nil }

func TestCheckRefusesWhatDfxDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	user := write(t, dir, "notes.txt", "a user's notes")
	link := filepath.Join(dir, "link.png")
	if err := os.Symlink(user, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "module")
	write(t, mod, "go.mod", "module example.com/m\n")
	write(t, mod, "pkg/code.go", "package pkg\n")
	if err := os.MkdirAll(filepath.Join(mod, "pkg", "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		owned      Owned
		want       string // in the message
	}{
		{"standard output", "-", allow, "standard output"},
		{"a missing folder", filepath.Join(dir, "missing", "x.png"), allow, "does not exist"},
		{"a folder", dir, allow, "is a folder"},
		{"a symbolic link, even to an owned file", link, allow, "symbolic link"},
		{"a FIFO", fifo, allow, "FIFO"},
		{"an existing file with no owner check", user, nil, "does not replace it"},
		{"an existing file that is not dfx's", user, PNGOwned, "not a PNG image"},
		{"a package's source folder", filepath.Join(mod, "pkg", "x.npy"), allow, "holds Go source files"},
		{"a package's test data", filepath.Join(mod, "pkg", "testdata", "x.npy"), allow, "test data of the Go package"},
	}
	if dev := deviceNode(t, dir); dev != "" {
		cases = append(cases, struct {
			name, path string
			owned      Owned
			want       string
		}{"a device node", dev, allow, "device"})
	}
	if _, err := exec.LookPath("git"); err == nil {
		repo := filepath.Join(dir, "repo")
		committed := write(t, repo, "figure.png", "committed")
		if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		if out, err := exec.Command("git", "-C", repo, "add", "figure.png").CombinedOutput(); err != nil {
			t.Fatalf("git add: %v %s", err, out)
		}
		cases = append(cases, struct {
			name, path string
			owned      Owned
			want       string
		}{"a file tracked by git, even one dfx may replace", committed, allow, "tracked by git"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check(c.path, c.owned)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%s) = %v, want a refusal saying %q", c.path, err, c.want)
			}
		})
	}
	if raw, _ := os.ReadFile(user); string(raw) != "a user's notes" {
		t.Errorf("the user's file changed: %q", raw)
	}
	fixtures := []string{"notes.txt", "link.png", "fifo", "module", "null", "repo"} // null and repo where made
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !slices.Contains(fixtures, e.Name()) {
			t.Errorf("Check left %s behind", e.Name())
		}
	}
}

func TestCheckAllowsNewFilesAndItsOwn(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "module")
	write(t, mod, "go.mod", "module example.com/m\n")
	write(t, mod, "pkg/code.go", "package pkg\n")
	own := write(t, dir, "own.out", "dfx's")
	for _, c := range []struct {
		name, path string
		owned      Owned
	}{
		{"a new file", filepath.Join(dir, "new.png"), nil},
		{"a new file beside go.mod", filepath.Join(mod, "samples.png"), nil},
		{"a new file in a data folder of the module", filepath.Join(mod, "figures", "x.png"), nil},
		{"a new file in a data folder below a package", filepath.Join(mod, "pkg", "out", "x.png"), nil},
		{"an existing file the owner check accepts", own, allow},
	} {
		if strings.HasPrefix(c.name, "a new file in a data folder") {
			if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := Check(c.path, c.owned); err != nil {
			t.Errorf("%s: Check(%s) = %v, want nil", c.name, c.path, err)
		}
	}
}

// failRename makes the n-th rename (from 1) fail, for the test's duration.
func failRename(t *testing.T, n int) {
	t.Helper()
	calls := 0
	rename = func(a, b string) error {
		calls++
		if calls == n {
			return errors.New("disk full")
		}
		return os.Rename(a, b)
	}
	t.Cleanup(func() { rename = os.Rename })
}

func TestWriteAllFailureKeepsWhatWasThere(t *testing.T) {
	dir := t.TempDir()
	first := write(t, dir, "samples.npy", "previous samples")
	second := filepath.Join(dir, "grid.png")
	failRename(t, 2)
	err := WriteAll([]File{{Path: first, Data: []byte("new samples"), Owned: allow}, {Path: second, Data: []byte("new grid")}})
	if err == nil {
		t.Fatal("WriteAll succeeded although the second rename failed")
	}
	if raw, _ := os.ReadFile(first); string(raw) != "previous samples" {
		t.Errorf("the first output after a failure holds %q, want its previous contents", raw)
	}
	if _, err := os.Lstat(second); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed output exists: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left behind: %v", names)
	}
}

func TestWriteAllFailureRemovesOnlyItsNewFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.png")
	failRename(t, 2)
	if err := WriteAll([]File{{Path: a, Data: []byte("a")}, {Path: b, Data: []byte("b")}}); err == nil {
		t.Fatal("WriteAll succeeded although the second rename failed")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed WriteAll left %d entries in a folder that was empty", len(entries))
	}
}

func TestWriteAllReplacesOwnedFilesTogether(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.npy", "old a")
	b := filepath.Join(dir, "b.png")
	if err := WriteAll([]File{{Path: a, Data: []byte("new a"), Owned: allow}, {Path: b, Data: []byte("new b")}}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{a: "new a", b: "new b"} {
		if raw, _ := os.ReadFile(p); string(raw) != want {
			t.Errorf("%s holds %q, want %q", p, raw, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("WriteAll left %d entries, want the 2 outputs", len(entries))
	}
	if err := WriteAll([]File{{Path: a, Data: []byte("x")}}); !errors.Is(err, ErrRefused) {
		t.Errorf("WriteAll over an existing file without an owner check = %v, want a refusal", err)
	}
}

func TestMarkedPNGDecodesAndIsOwned(t *testing.T) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := write(t, dir, "plain.png", buf.String())
	if err := PNGOwned(plain); err == nil {
		t.Error("PNGOwned accepts a PNG without dfx's mark")
	}
	marked, err := MarkPNG(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(marked))
	if err != nil || img.Bounds().Dx() != 3 {
		t.Fatalf("the marked PNG does not decode: %v", err)
	}
	if err := PNGOwned(write(t, dir, "marked.png", string(marked))); err != nil {
		t.Errorf("PNGOwned refuses dfx's own PNG: %v", err)
	}
	if _, err := MarkPNG([]byte("not a png")); err == nil {
		t.Error("MarkPNG accepts bytes that are not a PNG")
	}
}

func TestNPYOwnedWantsDfxsMark(t *testing.T) {
	header := func(dict string) string {
		dict += "\n"
		return "\x93NUMPY\x01\x00" + string([]byte{byte(len(dict)), 0}) + dict
	}
	dir := t.TempDir()
	numpy := write(t, dir, "numpy.npy", header("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"))
	dfx := write(t, dir, "dfx.npy", header("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), } "+input.NPYMarker))
	if err := NPYOwned(numpy); err == nil {
		t.Error("NPYOwned accepts NumPy's own file")
	}
	if err := NPYOwned(dfx); err != nil {
		t.Errorf("NPYOwned refuses a marked file: %v", err)
	}
	if err := NPYOwned(write(t, dir, "text.npy", "# written by dfx")); err == nil {
		t.Error("NPYOwned accepts a file that is not .npy")
	}
}

// deviceNode makes a character device like /dev/null in dir, where the
// process may (root), and returns its path; "" where it may not. Tests
// use it instead of /dev/null, which a regression would replace.
func deviceNode(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, unix1x3); err != nil {
		return ""
	}
	return p
}

// unix1x3 is the device number of /dev/null (major 1, minor 3).
const unix1x3 = 1<<8 | 3

// TestWriteAllSaysWhereThePreviousFileIsWhenItCannotPutItBack: if putting
// back a replaced file fails too, the error names the backup, which holds
// the previous contents and is left for the user.
func TestWriteAllSaysWhereThePreviousFileIsWhenItCannotPutItBack(t *testing.T) {
	dir := t.TempDir()
	first := write(t, dir, "samples.npy", "previous samples")
	calls := 0
	rename = func(a, b string) error {
		calls++
		if calls >= 2 { // the second output, then the restore
			return errors.New("disk gone")
		}
		return os.Rename(a, b)
	}
	t.Cleanup(func() { rename = os.Rename })
	err := WriteAll([]File{{Path: first, Data: []byte("new"), Owned: allow}, {Path: filepath.Join(dir, "grid.png"), Data: []byte("g")}})
	if err == nil {
		t.Fatal("WriteAll succeeded")
	}
	backup := filepath.Join(dir, ".samples.npy.dfx-previous-p"+strconv.Itoa(os.Getpid()))
	if !strings.Contains(err.Error(), backup) {
		t.Errorf("error %q does not name the backup %s", err, backup)
	}
	if raw, _ := os.ReadFile(backup); string(raw) != "previous samples" {
		t.Errorf("the backup holds %q", raw)
	}
	Check(filepath.Join(dir, "other.png"), nil) // a later write's clean-up must not remove it
	if _, err := atomicfile.Stage(filepath.Join(dir, "x"), func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(backup); err != nil {
		t.Errorf("the backup is gone after a later write: %v", err)
	}
}
