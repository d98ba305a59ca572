package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Prefixes of the folders WriteDir creates beside its target. A process
// killed mid-write leaves one behind; the next WriteDir into the same
// parent removes it.
const (
	tmpPrefix = ".tmp-"
	oldPrefix = ".old-"
)

// WriteDir renders the report into a new folder beside dir and swaps it in
// for dir only when every file is written: dir holds either the previous
// run's complete outputs or this run's, never a mix. dir must be one dfx
// may write into (CheckDir: new, empty, or written by WriteDir with nothing
// added since); the new folder gets a marker listing its files. Stale temporary
// folders of dir left by an interrupted run are removed first. ctx is
// checked between files; a cancelled write leaves dir untouched.
func WriteDir(ctx context.Context, r *Report, dir string) error {
	if err := r.Check(); err != nil {
		return err
	}
	dir, parent, base, err := splitOutputDir(dir)
	if err != nil {
		return err
	}
	if err := checkReplaceable(dir); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	cleanStale(parent, base)
	tmp, err := os.MkdirTemp(parent, tmpPrefix+base+"-")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it private
		return fmt.Errorf("report: %w", err)
	}
	written, err := r.render(ctx, tmp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, marker), manifestMarker(written), 0o644); err != nil {
		return fmt.Errorf("report %s: %w", r.Name, err)
	}
	if err := keepNotes(dir, tmp, written); err != nil {
		return fmt.Errorf("report %s: %w", r.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkReplaceable(dir); err != nil { // again: a file may have appeared while we wrote
		return fmt.Errorf("report: %w", err)
	}
	if err := swap(tmp, dir, parent, base); err != nil {
		return err
	}
	ok = true
	return nil
}

// keepNotes copies dir's Notes, if any, into the new outputs tmp (unless
// the report wrote one itself).
func keepNotes(dir, tmp string, written []string) error {
	if slices.Contains(written, Notes) {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, Notes))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(tmp, Notes), b, 0o644)
}

// splitOutputDir cleans dir and splits it into its parent and its own name.
func splitOutputDir(dir string) (clean, parent, base string, err error) {
	if dir == "" {
		return "", "", "", errors.New("report: empty output folder")
	}
	dir = filepath.Clean(dir)
	parent, base = filepath.Dir(dir), filepath.Base(dir)
	if base == "." || base == ".." || base == string(filepath.Separator) {
		return "", "", "", fmt.Errorf("report: output folder %q has no name of its own", dir)
	}
	return dir, parent, base, nil
}

// render writes every table, figure and file of the report into dir and
// returns their names, checking ctx between files.
func (r *Report) render(ctx context.Context, dir string) ([]string, error) {
	var written []string
	write := func(name string, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		written = append(written, name)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("report %s: %w", r.Name, err)
		}
		return nil
	}
	for _, t := range r.Tables {
		if !t.NoMarkdown {
			if err := write(t.Name+".md", []byte(t.Markdown())); err != nil {
				return nil, err
			}
		}
		if !t.NoCSV {
			if err := write(t.Name+".csv", []byte(t.CSV())); err != nil {
				return nil, err
			}
		}
		for _, m := range sectionCSVs(t) {
			if err := write(m.Name+".csv", []byte(m.CSV())); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range r.Figures {
		data, err := f.Render(strings.TrimPrefix(filepath.Ext(f.Name), "."))
		if err != nil {
			return nil, fmt.Errorf("report %s: figure %s: %w", r.Name, f.Name, err)
		}
		if err := write(f.Name, data); err != nil {
			return nil, err
		}
	}
	for _, f := range r.Files {
		if err := write(f.Name, f.Data); err != nil {
			return nil, err
		}
	}
	return written, nil
}

// swap renames tmp to dir, moving a previous dir aside first and removing
// it afterwards.
func swap(tmp, dir, parent, base string) error {
	if err := os.Rename(tmp, dir); err == nil {
		return nil
	}
	old, err := os.MkdirTemp(parent, oldPrefix+base+"-")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Remove(old); err != nil { // Rename needs the name free
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("report: moving the previous %s aside: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.Rename(old, dir) // put the previous outputs back
		return fmt.Errorf("report: %w", err)
	}
	return os.RemoveAll(old)
}

// cleanStale removes the temporary folders WriteDir left beside
// parent/base when a run was killed (".tmp-<base>-*", ".old-<base>-*").
// If base itself is missing but an ".old-" copy survived (a kill between
// the two renames of a swap), that copy is restored first.
func cleanStale(parent, base string) {
	olds, _ := filepath.Glob(filepath.Join(parent, oldPrefix+base+"-*"))
	if _, err := os.Stat(filepath.Join(parent, base)); errors.Is(err, os.ErrNotExist) && len(olds) > 0 {
		if os.Rename(olds[0], filepath.Join(parent, base)) == nil {
			olds = olds[1:]
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(parent, tmpPrefix+base+"-*"))
	for _, p := range append(olds, tmps...) {
		os.RemoveAll(p)
	}
}
