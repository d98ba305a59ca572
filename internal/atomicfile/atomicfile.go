// Package atomicfile writes files so that a reader (or a crashed run) never
// sees a half-written one: data goes to a temporary file in the same folder,
// is synced, and is renamed over the destination. A write that fails or is
// interrupted removes its temporary file; one left by a killed process is
// removed by the next write into the same folder.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tmpMarker separates a target's name from the writer's process id in a
// temporary file's name: ".<base>.tmp-p<pid>-<random>".
const tmpMarker = ".tmp-p"

// staleAge is how old a temporary file whose writer cannot be identified
// must be before a later write removes it.
const staleAge = 10 * time.Minute

// Write creates path (and its parent folders) atomically from what fill writes.
func Write(path string, fill func(w io.Writer) error) error {
	tmp, err := Stage(path, fill)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("atomicfile: %w", err)
	}
	return nil
}

// Stage writes what fill writes to a synced temporary file beside path
// (creating path's folders) and returns its name, for the caller to rename
// over path, or to remove. A failed fill leaves no temporary file.
func Stage(path string, fill func(w io.Writer) error) (_ string, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("atomicfile: %w", err)
	}
	CleanStale(dir)
	f, err := os.CreateTemp(dir, TempPrefix(path)+"*")
	if err != nil {
		return "", fmt.Errorf("atomicfile: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return "", fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return "", fmt.Errorf("atomicfile: %w", err)
	}
	if err = f.Close(); err != nil {
		return "", fmt.Errorf("atomicfile: %w", err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return "", fmt.Errorf("atomicfile: %w", err)
	}
	return tmp, nil
}

// TempPrefix is the start of the name of every temporary file that
// writes to path make (a staged file, a backup), so that CleanStale
// recognises them.
func TempPrefix(path string) string {
	return "." + filepath.Base(path) + tmpMarker + strconv.Itoa(os.Getpid()) + "-"
}

// WriteFile is Write for a byte slice.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// CleanStale removes the temporary files that writes into dir left behind
// when their process was killed: those whose writer's process no longer
// exists, and those of an unknown writer (older names ".<base>.tmp-<n>")
// older than ten minutes. A live process's files are kept.
func CleanStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		if i := strings.LastIndex(name, tmpMarker); i > 0 {
			rest := name[i+len(tmpMarker):]
			if j := strings.IndexByte(rest, '-'); j > 0 {
				if pid, err := strconv.Atoi(rest[:j]); err == nil {
					if pid != self && !processAlive(pid) {
						_ = os.Remove(filepath.Join(dir, name))
					}
					continue
				}
			}
		}
		if strings.Contains(name, ".tmp-") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAge {
				_ = os.Remove(filepath.Join(dir, name))
			}
		}
	}
}
