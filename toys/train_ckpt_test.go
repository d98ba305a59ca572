package toys

import (
	"bytes"
	"compress/gzip"
	"encoding/gob"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeGobGz(t *testing.T, path string, v any) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := gob.NewEncoder(zw).Encode(v); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptCheckpointsAreRejectedWithClearErrors(t *testing.T) {
	dir := t.TempDir()
	tc := QuickTrain()
	// Shape and data disagree.
	bad := filepath.Join(dir, "shape.gob.gz")
	writeGobGz(t, bad, checkpoint{Train: tc, Vars: []savedVar{{Scope: "/x", Name: "w", Dims: []int{3, 4}, Data: make([]float32, 5)}}})
	if _, _, err := loadCheckpoint(bad, tc, 1); err == nil || !strings.Contains(err.Error(), "values for shape") {
		t.Errorf("shape mismatch: %v", err)
	}
	// Not gzip at all.
	junk := filepath.Join(dir, "junk.gob.gz")
	os.WriteFile(junk, []byte("not a checkpoint"), 0o644)
	if _, _, err := loadCheckpoint(junk, tc, 1); err == nil {
		t.Error("junk accepted")
	}
	// Another training configuration.
	other := tc
	other.Width++
	mis := filepath.Join(dir, "mismatch.gob.gz")
	writeGobGz(t, mis, checkpoint{Train: other})
	if _, _, err := loadCheckpoint(mis, tc, 1); err == nil || !strings.Contains(err.Error(), "retrain") {
		t.Errorf("mismatched config: %v", err)
	}
}
