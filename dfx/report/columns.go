package report

import (
	"fmt"
	"strconv"
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
	// Key heads it in CSV, e.g. "sigma"; Name when empty.
	Key string
	// Unit is the unit of the raw values, e.g. "s"; CSV's heading is then
	// "Key [Unit]". Markdown shows Name alone: put the unit there (or in
	// Format) where a reader needs it.
	Unit string
	// Format is the fmt verb of a Float cell in Markdown and HTML, e.g.
	// "%.4g" ("%g" when empty); a FloatSE cell shows "mean ± se", both in
	// Format.
	Format string
}

// Cell is one typed value of a table: Float, FloatSE, Int, Text or
// Duration.
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

// show is the cell as Markdown and HTML show it in column col.
func (c Cell) show(col Column) string {
	f := col.Format
	if f == "" {
		f = "%g"
	}
	switch c.kind {
	case floatCell:
		return fmt.Sprintf(f, c.v)
	case floatSECell:
		return fmt.Sprintf(f+" ± "+f, c.v, c.se)
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
	}
	return c.s
}

func (c Cell) numeric() bool { return c.kind != textCell }

// Add appends a row of typed cells, one per column.
func (t *Table) Add(cells ...Cell) { t.Cells = append(t.Cells, cells) }

// typed reports whether the table holds typed columns.
func (t *Table) typed() bool { return len(t.Columns) > 0 }

// shown are the heading and rows as Markdown and HTML show them: the
// typed columns' names and formatted cells, or Header and Rows.
func (t *Table) shown() (header []string, rows [][]string) {
	if !t.typed() {
		return t.Header, t.Rows
	}
	header = make([]string, len(t.Columns))
	for i, c := range t.Columns {
		header[i] = c.Name
	}
	rows = make([][]string, len(t.Cells))
	for r, cells := range t.Cells {
		rows[r] = make([]string, len(cells))
		for i, c := range cells {
			rows[r][i] = c.show(t.Columns[min(i, len(t.Columns)-1)])
		}
	}
	return header, rows
}

// rawView are the heading and rows CSV writes for typed columns: "Key
// [Unit]" headings, a "Key_se" column after every column holding a
// standard error, and raw values.
func (t *Table) rawView() (header []string, rows [][]string) {
	withSE := make([]bool, len(t.Columns))
	for _, cells := range t.Cells {
		for i, c := range cells {
			if c.kind == floatSECell && i < len(withSE) {
				withSE[i] = true
			}
		}
	}
	for i, col := range t.Columns {
		key := col.Key
		if key == "" {
			key = col.Name
		}
		unit := ""
		if col.Unit != "" {
			unit = " [" + col.Unit + "]"
		}
		header = append(header, key+unit)
		if withSE[i] {
			header = append(header, key+"_se"+unit)
		}
	}
	for _, cells := range t.Cells {
		var row []string
		for i, c := range cells {
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

// checkShape reports a table that mixes text and typed columns or has a
// row of the wrong width.
func (t *Table) checkShape() error {
	if !t.typed() {
		if len(t.Cells) > 0 {
			return fmt.Errorf("%d rows of cells without Columns", len(t.Cells))
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
	for i, row := range t.Cells {
		if len(row) != len(t.Columns) {
			return fmt.Errorf("row %d has %d cells for %d columns", i, len(row), len(t.Columns))
		}
	}
	return nil
}
