package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
)

func TestUpdateIndexReplacesOnlyTheExperimentsSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), indexName)
	if err := updateIndex(path, "ot", []string{"- `ot/a.png`: old"}); err != nil {
		t.Fatal(err)
	}
	if err := updateIndex(path, "fields", []string{"- `fields/trace.png`: trace"}); err != nil {
		t.Fatal(err)
	}
	if err := updateIndex(path, "ot", []string{"- `ot/a.png`: new"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"## fields\n\n- `fields/trace.png`: trace", "## ot\n\n- `ot/a.png`: new"} {
		if !strings.Contains(s, want) {
			t.Errorf("index lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, ": old") || strings.Index(s, "## fields") > strings.Index(s, "## ot") {
		t.Errorf("stale or unsorted sections:\n%s", s)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("%d entries beside the index, want only the index (atomic write)", len(ents))
	}
}

// TestTheCLIRunsTheRegistry: `dfx reproduce` knows exactly the registered
// experiments, lists each with its doc in -h, and `all` leaves out the
// standalone ones.
func TestTheCLIRunsTheRegistry(t *testing.T) {
	want := []string{"access", "adjoint", "density", "fields", "mnist", "mnist-ablation", "mnist-baselines", "mnist-candidates", "mnist-density",
		"mnist-exact-model", "mnist-model", "ot", "toys", "toys-others"}
	notTest := func(names []string) []string { // the tests' own experiments are zz-…
		return slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, "zz-") })
	}
	if got := notTest(experimentNames()); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("registered %v, want %v", got, want)
	}
	var help strings.Builder
	reproduceUsage(&help)
	for _, e := range report.Experiments() {
		if e.Doc == "" || !strings.Contains(help.String(), e.Doc) {
			t.Errorf("%s: doc %q missing from dfx reproduce -h", e.Name, e.Doc)
		}
	}
	if got := strings.Join(notTest(standalone()), " "); got != "mnist-candidates mnist-model" {
		t.Errorf("standalone %q", got)
	}
}

// TestTheIndexNamesAnExperimentsNotes: a folder's NOTES.md gets one index
// line, a folder without notes none.
func TestTheIndexNamesAnExperimentsNotes(t *testing.T) {
	out := t.TempDir()
	if got := notesLines(out, "ot"); got != nil {
		t.Errorf("no notes, index lines %q", got)
	}
	os.MkdirAll(filepath.Join(out, "ot"), 0o755)
	os.WriteFile(filepath.Join(out, "ot", notesName), []byte("# ot\n"), 0o644)
	if got := notesLines(out, "ot"); len(got) != 1 || !strings.HasPrefix(got[0], "- `ot/NOTES.md`: ") {
		t.Errorf("notes, index lines %q", got)
	}
}
