package access

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestAccessQuickComparisonRunsAndScoresTheExactMethodsExactly: the quick
// comparison has every row, and its "exact" rows (access.Mixture's graph
// closed forms) agree with dfx/mixture's independent float64 evaluation to
// round-off.
func TestAccessQuickComparisonRunsAndScoresTheExactMethodsExactly(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two networks")
	}
	res, err := RunAccess(context.Background(), AccessQuick())
	if err != nil {
		t.Fatal(err)
	}
	if want := len(AccessQuick().Times) * 8; len(res.Rows) != want {
		t.Fatalf("%d rows, want %d", len(res.Rows), want)
	}
	for _, r := range res.Rows {
		if r.Method == "exact" && r.RelErr > 1e-9 {
			t.Errorf("t=%g %s exact: relative error %g", r.T, r.Kind, r.RelErr)
		}
	}
	dir := writeReport(t, res)
	for _, f := range []string{"access.md", "access.csv", "access_errors.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	t.Log("\n" + res.Tables()[0].Markdown())
}
