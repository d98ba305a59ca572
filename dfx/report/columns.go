package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Column is one typed column of a Table: its heading, the unit of its raw
// values and the format that shows them. A table of typed columns holds
// values (Cells), not text: Markdown and HTML show each value in its
// column's Format, CSV writes it in full precision under "Key [Unit]".
type Column struct {
	// Name heads the column in Markdown and HTML, e.g. "σ(t)" or
	// "time / query".
	Name string
	// Key heads it in CSV, e.g. "sigma"; Name when empty. Show and Section
	// name columns by Key (or Name).
	Key string
	// Unit is the unit of the raw values, e.g. "s"; CSV's heading is then
	// "Key [Unit]". Markdown shows Name alone: put the unit there (or in
	// Format) where a reader needs it.
	Unit string
	// Format is the fmt verb of a Float cell in Markdown and HTML, e.g.
	// "%.4g" ("%g" when empty), with any text around it; a FloatSE cell
	// shows "mean ± se", both in the verb, inside that text once:
	// "%.2f%%" shows 2.7 ± 0.28 as "2.70 ± 0.28%".
	Format string
	// Scale multiplies Float and FloatSE values in Markdown and HTML only
	// (1 when 0): 100 shows a fraction in percent while CSV keeps the
	// fraction.
	Scale float64
	// SEKey heads the CSV column of a FloatSE cell's error, e.g.
	// "asym_std" where the spread is a standard deviation; Key + "_se"
	// when empty. A column has an error column in CSV when it names an
	// SEKey or holds a FloatSE cell; it is empty where a cell has no
	// error.
	SEKey string
	// SEFormat is the verb of a FloatSE cell's error in Markdown and HTML,
	// e.g. "%.2g" beside a Format of "%.4g" (Format's verb when empty).
	SEFormat string
	// Blank is what Markdown and HTML show for a missing value (None, or a
	// Float or FloatSE whose value is NaN); "–" when empty. CSV writes an
	// empty field for None and "NaN" for NaN.
	Blank string
	// NoCSV shows the column in Markdown and HTML only (e.g. a verdict
	// spelled out); NoMarkdown writes it in CSV only (e.g. a parameter
	// that Markdown states in a section's title).
	NoCSV, NoMarkdown bool
}

// Cell is one typed value of a table: Float, FloatSE, Int, Text,
// Duration or None.
type Cell struct {
	kind  cellKind
	v, se float64
	n     int
	s     string
	d     time.Duration
}

type cellKind uint8

const (
	textCell cellKind = iota
	floatCell
	floatSECell
	intCell
	durationCell
	noneCell
)

// Float is a number.
func Float(v float64) Cell { return Cell{kind: floatCell, v: v} }

// FloatSE is a mean with its standard error; CSV gives the error a column
// of its own ("Key_se").
func FloatSE(mean, se float64) Cell { return Cell{kind: floatSECell, v: mean, se: se} }

// Int is an integer.
func Int(n int) Cell { return Cell{kind: intCell, n: n} }

// Text is a label.
func Text(s string) Cell { return Cell{kind: textCell, s: s} }

// Duration is a time: Markdown and HTML show it rounded to the
// microsecond ("1.234ms"), CSV in seconds (give its column Unit "s").
func Duration(d time.Duration) Cell { return Cell{kind: durationCell, d: d} }

// None is a missing value: Markdown and HTML show the column's Blank, CSV
// an empty field.
func None() Cell { return Cell{kind: noneCell} }

// show is the cell as Markdown and HTML show it in column col.
func (c Cell) show(col Column) string {
	f := col.Format
	if f == "" {
		f = "%g"
	}
	scale := col.Scale
	if scale == 0 {
		scale = 1
	}
	blank := col.Blank
	if blank == "" {
		blank = "–"
	}
	switch c.kind {
	case noneCell:
		return blank
	case floatCell:
		if math.IsNaN(c.v) {
			return blank
		}
		return fmt.Sprintf(f, scale*c.v)
	case floatSECell:
		if math.IsNaN(c.v) {
			return blank
		}
		before, verb, after := splitVerb(f)
		seVerb := verb
		if col.SEFormat != "" {
			seVerb = col.SEFormat
		}
		return fmt.Sprintf(before+verb+" ± "+seVerb+after, scale*c.v, scale*c.se)
	case intCell:
		return strconv.Itoa(c.n)
	case durationCell:
		return c.d.Round(time.Microsecond).String()
	}
	return c.s
}

// raw is the cell's value as CSV writes it: the shortest decimal that
// reads back to the same float64, durations in seconds.
func (c Cell) raw() string {
	switch c.kind {
	case floatCell, floatSECell:
		return strconv.FormatFloat(c.v, 'g', -1, 64)
	case intCell:
		return strconv.Itoa(c.n)
	case durationCell:
		return strconv.FormatFloat(c.d.Seconds(), 'g', -1, 64)
	case noneCell:
		return ""
	}
	return c.s
}

func (c Cell) numeric() bool { return c.kind != textCell }

// splitVerb splits a format into the text before its first verb, the verb
// (flags, width and precision included) and the text after it; "%%" is
// text.
func splitVerb(f string) (before, verb, after string) {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("+-# 0123456789.", f[j]) >= 0 {
			j++
		}
		if j < len(f) {
			j++
		}
		return f[:i], f[i:j], f[j:]
	}
	return f, "%g", ""
}

// Add appends a row of typed cells, one per column.
func (t *Table) Add(cells ...Cell) { t.Cells = append(t.Cells, cells) }

// Section starts a further part of t's rows under a title of its own:
// Markdown and HTML show it below t (it is appended to More), with t's
// columns; CSV continues t's rows with its rows, in one flat file. Add
// its rows to the section. Put what tells sections apart in a NoMarkdown
// column, so that the CSV keeps it.
func (t *Table) Section(title string) *Table {
	s := &Table{Title: title, Columns: t.Columns, Show: t.Show, Align: t.Align, part: true}
	t.More = append(t.More, s)
	return s
}

// View is a further section of t (appended to More) that shows other
// columns of t's rows, named by key in the order given, under a title of
// its own; the columns need not be shown by t (NoMarkdown). It reads t's
// rows when it is rendered, and CSV has it once, as t's columns.
func (t *Table) View(title string, keys ...string) *Table {
	v := &Table{Title: title, Columns: t.Columns, Show: keys, viewOf: t}
	t.More = append(t.More, v)
	return v
}

// key is the column's name in CSV and in Show.
func (c Column) key() string {
	if c.Key != "" {
		return c.Key
	}
	return c.Name
}

// typed reports whether the table holds typed columns.
func (t *Table) typed() bool { return len(t.Columns) > 0 }

// rows are the table's typed rows: a View's are those of its table.
func (t *Table) rows() [][]Cell {
	if t.viewOf != nil {
		return t.viewOf.Cells
	}
	return t.Cells
}

// visible are the indices of the columns Markdown and HTML show: those
// Show names, in its order, or else every column but the NoMarkdown ones.
func (t *Table) visible() []int {
	var out []int
	if len(t.Show) > 0 {
		for _, k := range t.Show {
			for i, c := range t.Columns {
				if c.key() == k {
					out = append(out, i)
					break
				}
			}
		}
		return out
	}
	for i, c := range t.Columns {
		if !c.NoMarkdown {
			out = append(out, i)
		}
	}
	return out
}

// shown are the heading and rows as Markdown and HTML show them: the
// visible typed columns' names and formatted cells, or Header and Rows.
func (t *Table) shown() (header []string, rows [][]string) {
	if !t.typed() {
		return t.Header, t.Rows
	}
	vis := t.visible()
	for _, i := range vis {
		header = append(header, t.Columns[i].Name)
	}
	for _, cells := range t.rows() {
		row := make([]string, len(vis))
		for j, i := range vis {
			if i < len(cells) {
				row[j] = cells[i].show(t.Columns[i])
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

// rawView are the heading and rows CSV writes for typed columns: "Key
// [Unit]" headings of every column but the NoCSV ones, a "Key_se" (or
// SEKey) column after every column holding a standard error, and raw
// values; the rows of t's Sections follow its own.
func (t *Table) rawView() (header []string, rows [][]string) {
	all := t.Cells
	for _, m := range t.More {
		if m.part {
			all = append(all[:len(all):len(all)], m.Cells...)
		}
	}
	withSE := make([]bool, len(t.Columns))
	for i, col := range t.Columns {
		withSE[i] = col.SEKey != ""
	}
	for _, cells := range all {
		for i, c := range cells {
			if c.kind == floatSECell && i < len(withSE) {
				withSE[i] = true
			}
		}
	}
	for i, col := range t.Columns {
		if col.NoCSV {
			continue
		}
		unit := ""
		if col.Unit != "" {
			unit = " [" + col.Unit + "]"
		}
		header = append(header, col.key()+unit)
		if withSE[i] {
			se := col.SEKey
			if se == "" {
				se = col.key() + "_se"
			}
			header = append(header, se+unit)
		}
	}
	for _, cells := range all {
		var row []string
		for i, c := range cells {
			if i < len(t.Columns) && t.Columns[i].NoCSV {
				continue
			}
			row = append(row, c.raw())
			if i < len(withSE) && withSE[i] {
				se := ""
				if c.kind == floatSECell {
					se = strconv.FormatFloat(c.se, 'g', -1, 64)
				}
				row = append(row, se)
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

// checkShape reports a table that mixes text and typed columns, has a
// row of the wrong width or shows a column it does not have.
func (t *Table) checkShape() error {
	if !t.typed() {
		if len(t.Cells) > 0 {
			return fmt.Errorf("%d rows of cells without Columns", len(t.Cells))
		}
		if len(t.Show) > 0 {
			return fmt.Errorf("Show without Columns")
		}
		for i, row := range t.Rows {
			if len(row) != len(t.Header) {
				return fmt.Errorf("row %d has %d cells for %d columns", i, len(row), len(t.Header))
			}
		}
		return nil
	}
	if len(t.Header) > 0 || len(t.Rows) > 0 {
		return fmt.Errorf("both typed Columns and a text Header or Rows")
	}
	if v := t.visible(); len(v) != len(t.Show) && len(t.Show) > 0 {
		return fmt.Errorf("Show names %d columns, %d of them found", len(t.Show), len(v))
	}
	for i, row := range t.rows() {
		if len(row) != len(t.Columns) {
			return fmt.Errorf("row %d has %d cells for %d columns", i, len(row), len(t.Columns))
		}
	}
	return nil
}
