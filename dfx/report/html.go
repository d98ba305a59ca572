package report

import (
	"encoding/base64"
	"fmt"
	"html"
	"path"
	"regexp"
	"strings"
)

// HTML renders the table as an HTML fragment: Title and Notes (Markdown
// prose: headings, paragraphs, lists, `code`, **bold**, *italic*, links)
// around a <table> whose columns follow Align, then the More sections.
// Cells are escaped; the table is the same one Markdown and CSV render.
func (t *Table) HTML() string {
	var b strings.Builder
	b.WriteString(`<div class="dfx-table">`)
	if t.Title != "" {
		b.WriteString(markdownHTML(t.Title))
	}
	header, rows := t.shown()
	numeric := numericColumns(t)
	align := func(i int) string {
		a := byte('l')
		if i < len(t.Align) {
			a = t.Align[i]
		} else if numeric[i] {
			a = 'r'
		}
		switch a {
		case 'r':
			return ` style="text-align:right;white-space:nowrap"`
		case 'c':
			return ` style="text-align:center"`
		}
		return ` style="text-align:left"`
	}
	b.WriteString("<table>\n<thead><tr>")
	for i, h := range header {
		fmt.Fprintf(&b, "<th%s>%s</th>", align(i), inlineHTML(h))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for i, c := range r {
			fmt.Fprintf(&b, "<td%s>%s</td>", align(i), inlineHTML(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	if len(t.Notes) > 0 {
		b.WriteString(markdownHTML(strings.Join(t.Notes, "\n")))
	}
	for _, m := range t.More {
		b.WriteString(m.HTML())
	}
	b.WriteString("</div>\n")
	return b.String()
}

// numericColumns marks the shown columns whose every cell is a number (typed)
// or starts with one (text; units may follow): they are right-aligned
// where Align does not say.
func numericColumns(t *Table) []bool {
	if t.typed() {
		vis := t.visible()
		out := make([]bool, len(vis))
		for j, i := range vis {
			out[j] = len(t.rows()) > 0
			for _, r := range t.rows() {
				if i < len(r) && !r[i].numeric() {
					out[j] = false
					break
				}
			}
		}
		return out
	}
	out := make([]bool, len(t.Header))
	for i := range out {
		out[i] = len(t.Rows) > 0
		for _, r := range t.Rows {
			if i < len(r) && !numberStart.MatchString(r[i]) {
				out[i] = false
				break
			}
		}
	}
	return out
}

var numberStart = regexp.MustCompile(`^\s*[-+−]?(\d|\.\d)`)

// HTML renders a figure as an HTML <figure>: the PNG (or SVG) inlined as a
// data: URI, with its caption below.
func (f *Figure) HTML() (string, error) {
	format := strings.TrimPrefix(path.Ext(f.Name), ".")
	data, err := f.Render(format)
	if err != nil {
		return "", fmt.Errorf("figure %s: %w", f.Name, err)
	}
	mime := "image/png"
	if format == "svg" {
		mime = "image/svg+xml"
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<figure class="dfx-figure"><img alt="%s" style="max-width:100%%" src="data:%s;base64,%s">`,
		html.EscapeString(f.Name), mime, base64.StdEncoding.EncodeToString(data))
	if f.Caption != "" {
		fmt.Fprintf(&b, "<figcaption>%s</figcaption>", inlineHTML(f.Caption))
	}
	b.WriteString("</figure>\n")
	return b.String(), nil
}

// HTML renders the whole report as one self-contained HTML fragment: the
// title, every table with a Markdown view (HTML) and every figure (inline
// images); CSV-only tables and Files are left out.
func (r *Report) HTML() (string, error) {
	var b strings.Builder
	if r.Title != "" {
		fmt.Fprintf(&b, "<h3>%s</h3>\n", inlineHTML(r.Title))
	}
	for _, t := range r.Tables {
		if !t.NoMarkdown {
			b.WriteString(t.HTML())
		}
	}
	for _, f := range r.Figures {
		h, err := f.HTML()
		if err != nil {
			return "", fmt.Errorf("report %s: %w", r.Name, err)
		}
		b.WriteString(h)
	}
	return b.String(), nil
}

// MarkdownHTML renders a Markdown file this package wrote (a table's
// Markdown: its title, notes and pipe table) as an HTML fragment, for a
// viewer that shows HTML but not Markdown.
func MarkdownHTML(md string) string {
	return `<div class="dfx-table">` + markdownHTML(md) + "</div>\n"
}

// markdownHTML renders the small Markdown subset that report titles,
// notes and tables use: ATX headings, paragraphs, "-"/"*" lists, pipe
// tables (a header row, a |---|---:| row, then rows), and inline `code`,
// **bold**, *italic* and [links](url). Everything else is escaped text.
func markdownHTML(md string) string {
	var b strings.Builder
	var para, table []string
	inList := false
	flush := func() {
		if len(para) > 0 {
			fmt.Fprintf(&b, "<p>%s</p>\n", inlineHTML(strings.Join(para, " ")))
			para = nil
		}
		if len(table) > 0 {
			b.WriteString(pipeTableHTML(table))
			table = nil
		}
	}
	closeList := func() {
		if inList {
			b.WriteString("</ul>\n")
			inList = false
		}
	}
	lines := strings.Split(md, "\n")
	for i, line := range lines {
		s := strings.TrimSpace(line)
		// a table starts at a "|" line followed by its rule row, and goes
		// on while lines start with "|"
		tableLine := strings.HasPrefix(s, "|") && (len(table) > 0 || i+1 < len(lines) && isTableRule(lines[i+1]))
		switch {
		case s == "":
			flush()
			closeList()
		case tableLine:
			if len(table) == 0 {
				flush()
				closeList()
			}
			table = append(table, s)
		case strings.HasPrefix(s, "#"):
			flush()
			closeList()
			n := len(s) - len(strings.TrimLeft(s, "#"))
			level := min(max(n+1, 3), 6) // headings inside a notebook output stay small
			fmt.Fprintf(&b, "<h%d>%s</h%d>\n", level, inlineHTML(strings.TrimSpace(s[n:])), level)
		case strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "* "):
			flush()
			if !inList {
				b.WriteString("<ul>\n")
				inList = true
			}
			fmt.Fprintf(&b, "<li>%s</li>\n", inlineHTML(s[2:]))
		case inList && strings.HasPrefix(line, " "):
			// a continuation of the last list item: reopen it
			str := b.String()
			if i := strings.LastIndex(str, "</li>\n"); i >= 0 {
				b.Reset()
				b.WriteString(str[:i] + " " + inlineHTML(s) + "</li>\n")
			}
		default:
			if len(table) > 0 {
				flush()
			}
			closeList()
			para = append(para, s)
		}
	}
	flush()
	closeList()
	return b.String()
}

// isTableRule reports whether line is a pipe table's rule row: "|" cells
// of dashes, each with an optional leading or trailing colon.
func isTableRule(line string) bool {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return false
	}
	cs := strings.Split(strings.Trim(line, "|"), "|")
	for _, c := range cs {
		c = strings.TrimSpace(c)
		if strings.Trim(c, ":-") != "" || !strings.Contains(c, "-") {
			return false
		}
	}
	return len(cs) > 0
}

// pipeTableHTML renders a Markdown pipe table: the first row is the
// header; the second, of dashes (":---", "---:", ":---:"), sets the
// alignment; cells are inline Markdown.
func pipeTableHTML(lines []string) string {
	cells := func(line string) []string { // split on "|", not on an escaped "\|"
		line = strings.TrimSpace(line)
		line = strings.TrimPrefix(line, "|")
		if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
			line = line[:len(line)-1]
		}
		var out []string
		var cur strings.Builder
		for i := 0; i < len(line); i++ {
			switch {
			case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
				cur.WriteByte('|')
				i++
			case line[i] == '|':
				out = append(out, strings.TrimSpace(cur.String()))
				cur.Reset()
			default:
				cur.WriteByte(line[i])
			}
		}
		return append(out, strings.TrimSpace(cur.String()))
	}
	var b strings.Builder
	b.WriteString("<table>\n")
	var align []string
	body := lines
	if len(lines) >= 2 && isTableRule(lines[1]) {
		for _, c := range cells(lines[1]) {
			switch {
			case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":"):
				align = append(align, ` style="text-align:center"`)
			case strings.HasSuffix(c, ":"):
				align = append(align, ` style="text-align:right;white-space:nowrap"`)
			default:
				align = append(align, ` style="text-align:left"`)
			}
		}
		at := func(i int) string {
			if i < len(align) {
				return align[i]
			}
			return ""
		}
		b.WriteString("<thead><tr>")
		for i, c := range cells(lines[0]) {
			fmt.Fprintf(&b, "<th%s>%s</th>", at(i), inlineHTML(c))
		}
		b.WriteString("</tr></thead>\n")
		body = lines[2:]
	}
	b.WriteString("<tbody>\n")
	for _, l := range body {
		b.WriteString("<tr>")
		for i, c := range cells(l) {
			a := ""
			if i < len(align) {
				a = align[i]
			}
			fmt.Fprintf(&b, "<td%s>%s</td>", a, inlineHTML(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	return b.String()
}

var (
	mdCode   = regexp.MustCompile("`([^`]+)`")
	mdBold   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	mdItalic = regexp.MustCompile(`(^|[^*\w])\*([^*\s][^*]*)\*`)
	mdLink   = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
)

// inlineHTML escapes s and renders inline code, bold, italic and links.
// Code spans are cut out first so that nothing inside them is rendered.
func inlineHTML(s string) string {
	var out strings.Builder
	last := 0
	for _, m := range mdCode.FindAllStringSubmatchIndex(s, -1) {
		out.WriteString(inlineText(s[last:m[0]]))
		out.WriteString("<code>" + html.EscapeString(s[m[2]:m[3]]) + "</code>")
		last = m[1]
	}
	out.WriteString(inlineText(s[last:]))
	return out.String()
}

func inlineText(s string) string {
	s = html.EscapeString(s)
	s = mdBold.ReplaceAllString(s, "<b>$1</b>")
	s = mdItalic.ReplaceAllString(s, "$1<i>$2</i>")
	return mdLink.ReplaceAllStringFunc(s, func(m string) string {
		p := mdLink.FindStringSubmatch(m)
		href := p[2]
		if strings.HasPrefix(strings.ToLower(href), "javascript:") {
			return p[1]
		}
		return fmt.Sprintf(`<a href="%s">%s</a>`, href, p[1])
	})
}
