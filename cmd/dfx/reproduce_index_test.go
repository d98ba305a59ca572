package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
