package atomicfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestWriteCreatesFileAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "a.txt")
	if err := WriteFile(p, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "hello" {
		t.Fatalf("got %q, %v", b, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("want only the file, got %d entries", len(ents))
	}
}

func TestFailedWriteKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := WriteFile(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	err := Write(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return errors.New("crash")
	})
	if err == nil {
		t.Fatal("want error")
	}
	b, _ := os.ReadFile(p)
	if string(b) != "old" {
		t.Fatalf("old content lost: %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temp file left behind: %d entries", len(ents))
	}
}

func TestStaleTempOfAKilledProcessIsRemovedByTheNextWrite(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to get a dead process id:", err)
	}
	dead := cmd.Process.Pid
	stale := filepath.Join(dir, ".a.txt"+tmpMarker+strconv.Itoa(dead)+"-123")
	live := filepath.Join(dir, ".b.txt"+tmpMarker+strconv.Itoa(os.Getpid())+"-456")
	oldStyle := filepath.Join(dir, ".c.txt.tmp-789")
	for _, p := range []string{stale, live, oldStyle} {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-time.Hour)
	os.Chtimes(oldStyle, past, past)
	if err := WriteFile(filepath.Join(dir, "other.txt"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{stale: false, live: true, oldStyle: false} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
