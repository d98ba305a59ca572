package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestColumnFormatsScaleBlankAndSEKey: Scale and the text around a
// Format's verb act in Markdown only, a FloatSE shows that text once, a
// missing value shows Blank, and SEKey names the error's CSV column.
func TestColumnFormatsScaleBlankAndSEKey(t *testing.T) {
	tab := &Table{Columns: []Column{
		{Name: "rate", Key: "rate", Format: "%.2f%%", Scale: 100, SEKey: "rate_std"},
		{Name: "paper", Key: "paper_pct", Format: "%.2f%%"},
		{Name: "inverse", Format: "%.2f", Scale: 100, Blank: "—"},
	}}
	tab.Add(FloatSE(0.027, 0.0028), Float(6.68), Float(math.NaN()))
	tab.Add(Float(0.5), None(), Float(0.25))
	md := tab.Markdown()
	for _, want := range []string{"| 2.70 ± 0.28% | 6.68% | — |", "| 50.00% | – | 25.00 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	want := "rate,rate_std,paper_pct,inverse\n0.027,0.0028,6.68,NaN\n0.5,,,0.25\n"
	if got := tab.CSV(); got != want {
		t.Errorf("csv\n%s\nwant\n%s", got, want)
	}
}

// TestSEFormatShowsTheErrorInItsOwnPrecision: a FloatSE's mean in
// Format's verb, its error in SEFormat's, CSV in full precision.
func TestSEFormatShowsTheErrorInItsOwnPrecision(t *testing.T) {
	tab := &Table{Columns: []Column{{Name: "reward (mean ± SE)", Key: "reward", Format: "%.4g", SEFormat: "%.2g"}}}
	tab.Add(FloatSE(-0.000364321, 0.000181234))
	if md := tab.Markdown(); !strings.Contains(md, "| -0.0003643 ± 0.00018 |") {
		t.Errorf("markdown:\n%s", md)
	}
	if got, want := tab.CSV(), "reward,reward_se\n-0.000364321,0.000181234\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
}

// TestSectionsViewsAndHiddenColumns: one typed table shows some columns in
// Markdown (in Show's order), others in a View section, more rows in a
// Section, and CSV writes every column but the NoCSV one, and every row,
// once.
func TestSectionsViewsAndHiddenColumns(t *testing.T) {
	tab := &Table{Name: "x", Title: "# A", Columns: []Column{
		{Name: "group", NoMarkdown: true},
		{Name: "t", Key: "t_shown", NoCSV: true},
		{Name: "t", NoMarkdown: true},
		{Name: "err", Format: "%.1f"},
		{Name: "nll", NoMarkdown: true},
		{Name: "verdict", NoCSV: true},
	}, Show: []string{"err", "t_shown", "verdict"}}
	tab.Add(Text("a"), Float(0), Float(1e-5), Float(1.25), Float(3), Text("ok"))
	b := tab.Section("# B")
	nll := tab.View("## NLL", "t_shown", "nll")
	b.Add(Text("b"), Float(1), Float(1), Float(2), Float(4), Text("bad"))
	tab.Add(Text("a"), Float(0.5), Float(0.5), Float(0.5), Float(5), Text("ok"))
	if err := (&Report{Name: "r", Tables: []*Table{tab}}).Check(); err != nil {
		t.Fatal(err)
	}
	want := "# A\n\n| err | t | verdict |\n| --- | --- | --- |\n| 1.2 | 0 | ok |\n| 0.5 | 0.5 | ok |\n\n" +
		"# B\n\n| err | t | verdict |\n| --- | --- | --- |\n| 2.0 | 1 | bad |\n\n" +
		"## NLL\n\n| t | nll |\n| --- | --- |\n| 0 | 3 |\n| 0.5 | 5 |\n"
	if got := tab.Markdown(); got != want {
		t.Errorf("markdown\n%s\nwant\n%s", got, want)
	}
	wantCSV := "group,t,err,nll\na,1e-05,1.25,3\na,0.5,0.5,5\nb,1,2,4\n"
	if got := tab.CSV(); got != wantCSV {
		t.Errorf("csv\n%s\nwant\n%s", got, wantCSV)
	}
	if h := nll.HTML(); !strings.Contains(h, `<td style="text-align:right;white-space:nowrap">5</td>`) {
		t.Errorf("view's HTML lacks its table's rows:\n%s", h)
	}
	nll.Show = append(nll.Show, "missing")
	if err := (&Report{Name: "r", Tables: []*Table{tab}}).Check(); err == nil {
		t.Error("a View showing a column its table lacks: accepted")
	}
}

// TestNamedSectionWritesItsOwnCSV: a More section with a Name of its own
// is a section of the Markdown file and a CSV file of its own, listed in
// the index.
func TestNamedSectionWritesItsOwnCSV(t *testing.T) {
	part := &Table{Name: "x-part", Title: "## Part", Caption: "the part", Columns: []Column{{Name: "v", Format: "%.1f"}}}
	part.Add(Float(0.25))
	r := &Report{Name: "r", Tables: []*Table{{Name: "x", NoCSV: true, Columns: []Column{{Name: "a"}}, Cells: [][]Cell{{Int(1)}}, More: []*Table{part}}}}
	dir := filepath.Join(t.TempDir(), "r")
	if err := WriteDir(context.Background(), r, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "x-part.csv")); err != nil || string(b) != "v\n0.25\n" {
		t.Errorf("x-part.csv = %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "x.md")); !strings.Contains(string(b), "## Part\n\n| v |\n| --- |\n| 0.2 |") {
		t.Errorf("x.md lacks the section:\n%s", b)
	}
	if lines := r.IndexLines("d", "cmd"); len(lines) != 2 || !strings.Contains(lines[1], "d/x-part.csv`: the part") {
		t.Errorf("index lines %q", lines)
	}
	r.Tables = append(r.Tables, &Table{Name: "x-part", NoMarkdown: true, Columns: []Column{{Name: "a"}}})
	if r.Check() == nil {
		t.Error("two x-part.csv: accepted")
	}
}
