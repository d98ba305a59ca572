// Package report is dfx's one result contract. An experiment's Result
// implements Result: it returns a Report, which holds its tables (Markdown
// and CSV), figures (rendered on demand, PNG or SVG) and any other files,
// all in memory. WriteDir writes a report into a folder and swaps it in
// whole, so the folder never mixes two runs; notebooks display the same
// report from memory (Table.Markdown, Figure.PNG) without touching disk.
package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"path"
	"strings"
)

// Result is implemented by every experiment's result.
type Result interface {
	Report() (*Report, error)
}

// Report is everything an experiment produced.
type Report struct {
	Name    string // the experiment, e.g. "toys"; also the default folder name
	Title   string // one line, e.g. "Table 2: DF-TM vs VJP on the 2-D chessboard"
	Tables  []*Table
	Figures []*Figure
	Files   []*File // other outputs (raw series, logs) written as they are
}

// Table is a table with a header row. Markdown renders Title above it,
// Notes below and then the More sections; CSV has the header and rows only.
//
// A table holds either typed columns (Columns and Cells: values that
// Markdown and HTML show rounded in each column's format and CSV writes in
// full precision, one value for every view) or text (Header and Rows,
// shown as they are). A typed table's Markdown may split it into
// sections (Section: more rows; View: more columns) and leave columns out
// (Column.NoMarkdown, Show) while CSV writes them all in one flat file.
// Where the two views hold different rows (a wide Markdown table, a long
// CSV), a report holds two tables of one Name, one NoCSV and one
// NoMarkdown.
type Table struct {
	Name    string // file stem: Name.md and Name.csv
	Title   string // Markdown above the table: a heading, paragraphs
	Caption string // one line for figures/INDEX.md
	Columns []Column
	Cells   [][]Cell // rows of typed values, one per column (Add)
	Header  []string
	Rows    [][]string
	Notes   []string
	// Show names by Key (or Name) the typed columns Markdown and HTML
	// show, in that order; every column but the NoMarkdown ones when
	// empty. CSV keeps Columns' order.
	Show []string
	// Align has one letter per shown column, 'l' (the default), 'r' or 'c'.
	Align string
	// More are further sections of the Markdown file. A section with a Name
	// of its own (and not NoCSV) also writes Name.csv, its rows alone.
	More []*Table
	// NoCSV writes only the Markdown file, NoMarkdown only the CSV file.
	NoCSV, NoMarkdown bool

	part   bool   // a Section: CSV writes its rows with its table's
	viewOf *Table // a View: it shows this table's rows
}

// Figure renders a picture on demand.
type Figure struct {
	Name    string // file name with extension: "trace.png" or "trace.svg"
	Caption string // one line for figures/INDEX.md
	// Render draws the figure in format "png" or "svg".
	Render func(format string) ([]byte, error)
}

// File is any other output.
type File struct {
	Name    string
	Caption string
	Data    []byte
}

// Markdown renders the table as GitHub-flavoured Markdown. Cells have '|'
// escaped and newlines folded, so that no value breaks the table.
func (t *Table) Markdown() string {
	var b strings.Builder
	if t.Title != "" {
		fmt.Fprintf(&b, "%s\n\n", t.Title)
	}
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdCell(c) + " |")
		}
		b.WriteString("\n")
	}
	header, rows := t.shown()
	row(header)
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
		if i < len(t.Align) {
			switch t.Align[i] {
			case 'r':
				seps[i] = "---:"
			case 'c':
				seps[i] = ":---:"
			}
		}
	}
	row(seps)
	for _, r := range rows {
		row(r)
	}
	for i, n := range t.Notes {
		if i == 0 {
			b.WriteString("\n")
		}
		b.WriteString(n + "\n")
	}
	for _, m := range t.More {
		b.WriteString("\n" + m.Markdown())
	}
	return b.String()
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// CSV renders the header and rows as RFC 4180 CSV; typed columns as
// "Key [Unit]" with raw values (rawView).
func (t *Table) CSV() string {
	header, rows := t.Header, t.Rows
	if t.typed() {
		header, rows = t.rawView()
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(header)
	_ = w.WriteAll(rows) // flushes
	return b.String()
}

// PNG renders a figure as PNG.
func (f *Figure) PNG() ([]byte, error) { return f.Render("png") }

// Check reports the first structural problem: empty or duplicate names,
// names that are not plain file names, rows of the wrong width, a table
// mixing typed and text columns, a figure
// without a renderer or with an extension other than .png/.svg.
func (r *Report) Check() error {
	if r.Name == "" {
		return errors.New("report: no name")
	}
	seen := map[string]bool{}
	add := func(name string) error {
		if name == "" || name != path.Base(name) || strings.HasPrefix(name, ".") || strings.ContainsAny(name, `\/`) {
			return fmt.Errorf("report %s: %q is not a plain file name", r.Name, name)
		}
		if seen[name] {
			return fmt.Errorf("report %s: %s written twice", r.Name, name)
		}
		seen[name] = true
		return nil
	}
	for _, t := range r.Tables {
		if t.NoCSV && t.NoMarkdown {
			return fmt.Errorf("report %s: table %s writes no file", r.Name, t.Name)
		}
		if !t.NoMarkdown {
			if err := add(t.Name + ".md"); err != nil {
				return err
			}
		}
		if !t.NoCSV {
			if err := add(t.Name + ".csv"); err != nil {
				return err
			}
		}
		for _, part := range append([]*Table{t}, t.More...) {
			if err := part.checkShape(); err != nil {
				return fmt.Errorf("report %s: table %s: %w", r.Name, t.Name, err)
			}
		}
		for _, m := range sectionCSVs(t) {
			if err := add(m.Name + ".csv"); err != nil {
				return err
			}
		}
	}
	for _, f := range r.Figures {
		if err := add(f.Name); err != nil {
			return err
		}
		if ext := path.Ext(f.Name); ext != ".png" && ext != ".svg" {
			return fmt.Errorf("report %s: figure %s: want .png or .svg", r.Name, f.Name)
		}
		if f.Render == nil {
			return fmt.Errorf("report %s: figure %s has no renderer", r.Name, f.Name)
		}
	}
	for _, f := range r.Files {
		if err := add(f.Name); err != nil {
			return err
		}
	}
	return nil
}

// sectionCSVs are the sections of t that write a CSV file of their own.
func sectionCSVs(t *Table) []*Table {
	var out []*Table
	if t.NoMarkdown {
		return nil
	}
	for _, m := range t.More {
		if m.Name != "" && !m.NoCSV {
			out = append(out, m)
		}
	}
	return out
}

// Table returns the table named name, or nil; of two tables of one name
// (a Markdown and a CSV view), the Markdown one.
func (r *Report) Table(name string) *Table {
	var found *Table
	for _, t := range r.Tables {
		if t.Name == name && (found == nil || found.NoMarkdown) {
			found = t
		}
	}
	return found
}

// csvOf is the CSV-only table named name, or nil.
func (r *Report) csvOf(name string) *Table {
	for _, t := range r.Tables {
		if t.Name == name && t.NoMarkdown {
			return t
		}
	}
	return nil
}

// Figure returns the figure named name (with or without its extension), or nil.
func (r *Report) Figure(name string) *Figure {
	for _, f := range r.Figures {
		if f.Name == name || strings.TrimSuffix(f.Name, path.Ext(f.Name)) == name {
			return f
		}
	}
	return nil
}

// IndexLines are the report's lines of figures/INDEX.md: one per table,
// figure and file with its caption, and the command that makes it.
func (r *Report) IndexLines(dir, command string) []string {
	var out []string
	line := func(name, caption string) {
		out = append(out, fmt.Sprintf("- `%s/%s`: %s (`%s`)", dir, name, caption, command))
	}
	for _, t := range r.Tables {
		c := t.Caption
		if c == "" {
			c = strings.SplitN(strings.TrimLeft(t.Title, "# "), "\n", 2)[0]
		}
		if t.NoMarkdown {
			if md := r.Table(t.Name); md != nil && !md.NoMarkdown {
				continue // listed with its Markdown table
			}
			line(t.Name+".csv", c)
			continue
		}
		if !t.NoCSV || r.csvOf(t.Name) != nil {
			c += " (also " + t.Name + ".csv)"
		}
		line(t.Name+".md", c)
		for _, m := range sectionCSVs(t) {
			mc := m.Caption
			if mc == "" {
				mc = strings.SplitN(strings.TrimLeft(m.Title, "# "), "\n", 2)[0]
			}
			line(m.Name+".csv", mc)
		}
	}
	for _, f := range r.Figures {
		line(f.Name, f.Caption)
	}
	for _, f := range r.Files {
		line(f.Name, f.Caption)
	}
	return out
}
