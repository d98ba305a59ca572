package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/internal/input"
)

// maxMarkerBytes bounds the marker read back (one line per file written).
const maxMarkerBytes = 16 << 20

// marker is the file by which dfx recognises a folder it wrote. WriteDir
// puts one in every folder it writes, listing the files it wrote there (its
// manifest); ClaimDir puts one without a manifest in a parent output folder
// (one that holds output folders and an index, and is never replaced whole).
const marker = ".dfx-output"

// markerHead is the first line of every marker; a parent's marker has
// nothing else, an output folder's lists its files, one a line.
const (
	markerHead   = "# written by dfx: it replaces the files listed below when it writes here again, and writes only into folders that hold this file (or are empty)"
	parentMarker = "# a parent folder: dfx writes its index file and output folders here, and touches nothing else"
)

// Notes is the hand-written reading of an output folder (figures/<exp>/
// NOTES.md: what the numbers mean, the verdicts): dfx never writes it, and
// keeps it when it replaces the folder's outputs.
const Notes = "NOTES.md"

// errNotOwned is wrapped by the errors about an output folder dfx must not
// write into: one holding files dfx did not write, a source folder, or /.
var errNotOwned = errors.New("not a folder dfx may write into")

// CheckDir reports whether dfx may write into dir: it does not exist yet,
// is empty, or holds a marker — a parent's, or an output folder's whose
// manifest lists every file in it besides Notes (a file the user added is
// never replaced). The file system's root and source folders (a go.mod, .git or
// .go files) are refused in any case.
func CheckDir(dir string) error {
	if err := CheckNotSource(dir); err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output folder %s: %w", dir, err)
	}
	if len(ents) == 0 {
		return nil
	}
	raw, err := input.ReadAll(filepath.Join(dir, marker), maxMarkerBytes)
	if err != nil {
		return fmt.Errorf("output folder %s holds files dfx did not write (e.g. %s; no %s marker): choose a new or empty folder: %w", dir, ents[0].Name(), marker, errNotOwned)
	}
	parent, manifest := parseMarker(string(raw))
	if parent {
		return nil
	}
	for _, e := range ents {
		if n := e.Name(); n != marker && n != Notes && !slices.Contains(manifest, n) {
			return fmt.Errorf("output folder %s holds %s, which dfx did not write (not listed in its %s): move it away or choose another folder: %w", dir, n, marker, errNotOwned)
		}
	}
	return nil
}

// CheckNotSource refuses the file system's root and source folders (a
// go.mod, .git or .go files) as output folders.
func CheckNotSource(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if abs == filepath.VolumeName(abs)+string(filepath.Separator) {
		return fmt.Errorf("output folder %s is the file system's root: %w", dir, errNotOwned)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if n == "go.mod" || n == ".git" || strings.HasSuffix(n, ".go") {
			return fmt.Errorf("output folder %s holds %s: a source folder, which dfx never writes into; choose a new or empty folder: %w", dir, n, errNotOwned)
		}
	}
	return nil
}

// ClaimDir makes dir a parent output folder: CheckDir must allow it; it is
// created if missing, and given a parent marker if it has none.
func ClaimDir(dir string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output folder %s: %w", dir, err)
	}
	p := filepath.Join(dir, marker)
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := atomicfile.WriteFile(p, []byte(markerHead+"\n"+parentMarker+"\n")); err != nil {
		return fmt.Errorf("output folder %s: %w", dir, err)
	}
	return nil
}

// checkReplaceable is CheckDir for a folder that WriteDir replaces whole:
// a parent output folder (which may hold things dfx did not write beside
// its outputs) is refused as well.
func checkReplaceable(dir string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	if raw, err := input.ReadAll(filepath.Join(dir, marker), maxMarkerBytes); err == nil {
		if parent, _ := parseMarker(string(raw)); parent {
			return fmt.Errorf("output folder %s holds other output folders: it is never replaced whole: %w", dir, errNotOwned)
		}
	}
	return nil
}

// manifestMarker is the marker of an output folder holding names.
func manifestMarker(names []string) []byte {
	var b strings.Builder
	b.WriteString(markerHead + "\n")
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return []byte(b.String())
}

// parseMarker reads a marker: whether it is a parent's, and its manifest.
func parseMarker(s string) (parent bool, names []string) {
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == parentMarker:
			parent = true
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			names = append(names, l)
		}
	}
	return parent, names
}
