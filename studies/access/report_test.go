package access

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dfx-lab/dfx/dfx/report"
)

// writeReport writes a result's report through report.WriteDir into a new
// folder and returns it.
func writeReport(t *testing.T, res report.Result) string {
	t.Helper()
	rep, err := res.Report()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), rep.Name)
	if err := report.WriteDir(context.Background(), rep, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
