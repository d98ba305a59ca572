package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func sample(fail bool) *Report {
	return &Report{
		Name: "exp",
		Tables: []*Table{{Name: "t", Title: "**Table**", Columns: []Column{{Name: "a"}, {Name: "b|c"}},
			Cells: [][]Cell{{Int(1), Text("x,y")}, {Int(2), Text("line\nbreak")}}, Notes: []string{"note"}}},
		Figures: []*Figure{{Name: "f.png", Caption: "a figure", Render: func(format string) ([]byte, error) {
			if fail {
				return nil, errors.New("renderer broke")
			}
			return []byte("PNG:" + format), nil
		}}},
		Files: []*File{{Name: "raw.txt", Data: []byte("raw")}},
	}
}

func TestMarkdownEscapesCellsAndCSVQuotes(t *testing.T) {
	tab := sample(false).Tables[0]
	md := tab.Markdown()
	for _, want := range []string{"**Table**\n\n", `| a | b\|c |`, "| --- | --- |", "| 2 | line break |", "\nnote\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if got, want := tab.CSV(), "a,b|c\n1,\"x,y\"\n2,\"line\nbreak\"\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
}

func TestCheckRejectsBadNamesDuplicatesAndRaggedRows(t *testing.T) {
	for name, mutate := range map[string]func(r *Report){
		"path":      func(r *Report) { r.Files[0].Name = "../x" },
		"hidden":    func(r *Report) { r.Files[0].Name = ".x" },
		"duplicate": func(r *Report) { r.Files[0].Name = "f.png" },
		"ragged":    func(r *Report) { r.Tables[0].Cells[0] = []Cell{Int(1)} },
		"mixed":     func(r *Report) { r.Tables[0].Rows = [][]string{{"1", "2"}} },
		"extension": func(r *Report) { r.Figures[0].Name = "f.jpg" },
		"renderer":  func(r *Report) { r.Figures[0].Render = nil },
		"no name":   func(r *Report) { r.Name = "" },
	} {
		r := sample(false)
		mutate(r)
		if err := r.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := sample(false).Check(); err != nil {
		t.Error(err)
	}
}

func list(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteDirSwapsInWholeAndKeepsThePreviousRunOnFailure(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "exp")
	ctx := context.Background()
	if err := WriteDir(ctx, sample(false), dir); err != nil {
		t.Fatal(err)
	}
	if got := list(t, dir); !slices.Equal(got, []string{marker, "f.png", "raw.txt", "t.csv", "t.md"}) {
		t.Fatalf("files %v", got)
	}
	// an output of an older run, listed in its marker
	os.WriteFile(filepath.Join(dir, "stale-from-an-older-run.png"), []byte("old"), 0o644)
	m, _ := os.ReadFile(filepath.Join(dir, marker))
	os.WriteFile(filepath.Join(dir, marker), append(m, "stale-from-an-older-run.png\n"...), 0o644)
	// A failing figure: the previous outputs stay as they were, no temporary folder remains.
	if err := WriteDir(ctx, sample(true), dir); err == nil {
		t.Fatal("renderer error not reported")
	}
	if got := list(t, dir); len(got) != 6 {
		t.Errorf("previous run damaged: %v", got)
	}
	if got := list(t, parent); !slices.Equal(got, []string{"exp"}) {
		t.Errorf("left behind: %v", got)
	}
	// A cancelled write leaves it untouched too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := WriteDir(cctx, sample(false), dir); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	// A successful run replaces the folder whole: the older file is gone.
	if err := WriteDir(ctx, sample(false), dir); err != nil {
		t.Fatal(err)
	}
	if got := list(t, dir); len(got) != 5 {
		t.Errorf("runs mixed: %v", got)
	}
	if got := list(t, parent); !slices.Equal(got, []string{"exp"}) {
		t.Errorf("left behind: %v", got)
	}
}

func TestStaleFoldersOfAKilledRunAreCleanedOrRestored(t *testing.T) {
	parent := t.TempDir()
	for _, n := range []string{".tmp-exp-123", ".tmp-exp-456", ".tmp-other-1"} {
		os.MkdirAll(filepath.Join(parent, n), 0o755)
	}
	// Killed between the two renames: only the old copy exists.
	os.MkdirAll(filepath.Join(parent, ".old-exp-9"), 0o755)
	os.WriteFile(filepath.Join(parent, ".old-exp-9", "t.md"), []byte("previous"), 0o644)
	cleanStale(parent, "exp")
	if got := list(t, parent); !slices.Equal(got, []string{".tmp-other-1", "exp"}) {
		t.Errorf("after cleaning: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(parent, "exp", "t.md")); string(b) != "previous" {
		t.Error("previous outputs not restored")
	}
}

func TestWriteDirRefusesFoldersWithoutAName(t *testing.T) {
	for _, d := range []string{"", "/", ".", ".."} {
		if err := WriteDir(context.Background(), sample(false), d); err == nil {
			t.Errorf("%q accepted", d)
		}
	}
}

func ExampleTable_Markdown() {
	t := &Table{Name: "demo", Title: "Relative error", Columns: []Column{
		{Name: "t", Format: "%.1f"},
		{Name: "DF-TM", Key: "dftm_rel_err", Unit: "%", Format: "%.4g %%"},
	}}
	t.Add(Float(1), Float(0.06))
	t.Add(Float(0.2), Float(4210))
	fmt.Print(t.Markdown())
	fmt.Print(t.CSV())
	// Output:
	// Relative error
	//
	// | t | DF-TM |
	// | --- | --- |
	// | 1.0 | 0.06 % |
	// | 0.2 | 4210 % |
	// t,dftm_rel_err [%]
	// 1,0.06
	// 0.2,4210
}

func TestTypedColumnsShowFormattedAndWriteRawValues(t *testing.T) {
	tab := &Table{Columns: []Column{
		{Name: "method"},
		{Name: "bpd", Format: "%.3f"},
		{Name: "time / image", Key: "time_per_image", Unit: "s"},
		{Name: "NFE"},
	}}
	tab.Add(Text("df-tm"), FloatSE(1.0/3, 0.01), Duration(1234567*time.Nanosecond), Int(20))
	tab.Add(Text("vjp"), Float(2), Duration(2*time.Second), Int(5))
	md := tab.Markdown()
	for _, want := range []string{"| method | bpd | time / image | NFE |", "| df-tm | 0.333 ± 0.010 | 1.235ms | 20 |", "| vjp | 2.000 | 2s | 5 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	want := "method,bpd,bpd_se,time_per_image [s],NFE\n" +
		"df-tm,0.3333333333333333,0.01,0.001234567,20\n" +
		"vjp,2,,2,5\n"
	if got := tab.CSV(); got != want {
		t.Errorf("csv\n%s\nwant\n%s", got, want)
	}
	h := tab.HTML()
	for _, want := range []string{`<th style="text-align:left">method</th>`, `<td style="text-align:right;white-space:nowrap">0.333 ± 0.010</td>`} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
}

func TestSectionsAlignmentAndSplitViews(t *testing.T) {
	r := &Report{Name: "x", Tables: []*Table{
		{Name: "t", Title: "# T", Header: []string{"a", "b"}, Rows: [][]string{{"1", "2"}}, Align: "lr", NoCSV: true,
			More: []*Table{{Title: "## More", Header: []string{"c"}, Rows: [][]string{{"3"}}, Notes: []string{"end"}}}},
		{Name: "t", Header: []string{"a", "b", "extra"}, Rows: [][]string{{"1", "2", "3"}}, NoMarkdown: true},
	}}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	md := r.Table("t").Markdown()
	want := "# T\n\n| a | b |\n| --- | ---: |\n| 1 | 2 |\n\n## More\n\n| c |\n| --- |\n| 3 |\n\nend\n"
	if md != want {
		t.Errorf("markdown\n%q\nwant\n%q", md, want)
	}
	lines := r.IndexLines("figures/x", "dfx reproduce x")
	if len(lines) != 1 || !strings.Contains(lines[0], "t.md") || !strings.Contains(lines[0], "t.csv") {
		t.Errorf("index lines %q: want one line naming t.md and t.csv", lines)
	}
	r.Tables[0].More[0].Rows[0] = []string{"3", "4"}
	if r.Check() == nil {
		t.Error("ragged row in a section accepted")
	}
}

func TestWriteDirFolderIsReadableByAll(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "exp")
	if err := WriteDir(context.Background(), sample(false), dir); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Errorf("folder mode %v, want rwxr-xr-x like any other", st.Mode().Perm())
	}
}

// TestWriteDirWritesOnlyIntoItsOwnFolders: WriteDir replaces a folder it
// wrote (marker listing its files), refuses one holding a file it did not
// write (which it leaves untouched), a source folder and the root, and
// ClaimDir marks a parent folder once.
func TestWriteDirWritesOnlyIntoItsOwnFolders(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "exp")
	if err := WriteDir(ctx, sample(false), dir); err != nil {
		t.Fatal(err)
	}
	if m, err := os.ReadFile(filepath.Join(dir, marker)); err != nil || !strings.Contains(string(m), "\n") {
		t.Fatalf("no marker: %v", err)
	}
	if err := WriteDir(ctx, sample(false), dir); err != nil {
		t.Fatalf("rewriting its own folder: %v", err)
	}
	mine := filepath.Join(dir, "notes.txt")
	os.WriteFile(mine, []byte("mine"), 0o644)
	if err := WriteDir(ctx, sample(false), dir); !errors.Is(err, errNotOwned) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("folder with a user's file: %v", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "mine" {
		t.Fatal("the user's file was touched")
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "INDEX.md"), []byte("mine"), 0o644)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main"), 0o644)
	for _, d := range []string{foreign, src, "/"} {
		if err := CheckDir(d); !errors.Is(err, errNotOwned) {
			t.Errorf("CheckDir(%s) = %v, want errNotOwned", d, err)
		}
	}
	parent := filepath.Join(t.TempDir(), "out")
	if err := ClaimDir(parent); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(parent, "bench.txt"), []byte("kept beside"), 0o644)
	if err := ClaimDir(parent); err != nil {
		t.Fatalf("a claimed parent: %v", err)
	}
	if err := WriteDir(ctx, sample(false), parent); !errors.Is(err, errNotOwned) {
		t.Fatalf("WriteDir over a parent folder: %v", err)
	}
}

// TestWriteDirKeepsTheFolderNotes: a folder's hand-written NOTES.md does
// not make it foreign, and survives the swap of its outputs.
func TestWriteDirKeepsTheFolderNotes(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "exp")
	if err := WriteDir(ctx, sample(false), dir); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, Notes)
	if err := os.WriteFile(notes, []byte("reading"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(ctx, sample(false), dir); err != nil {
		t.Fatalf("rewriting a folder with its notes: %v", err)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "reading" {
		t.Fatalf("notes after the rewrite: %q, %v", b, err)
	}
	if m, _ := os.ReadFile(filepath.Join(dir, marker)); strings.Contains(string(m), Notes) {
		t.Error("the marker lists the notes as dfx's own")
	}
}
