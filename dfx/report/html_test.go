package report

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func TestTableHTMLEscapesCellsAndAlignsColumns(t *testing.T) {
	tab := &Table{Name: "t", Title: "### Cost per call\n\nMeasured on `2 CPUs`.", Columns: []Column{{Name: "method"}, {Name: "time (ms)", Unit: "ms", Format: "%g ms"}}, Align: "lr",
		Cells: [][]Cell{{Text("<script>"), Float(1.5)}}, Notes: []string{"- first", "- **second**"},
		More: []*Table{{Title: "More", Columns: []Column{{Name: "x"}}, Cells: [][]Cell{{Text("y")}}}}}
	h := tab.HTML()
	for _, want := range []string{
		"<h4>Cost per call</h4>", "<p>Measured on <code>2 CPUs</code>.</p>",
		`<th style="text-align:right;white-space:nowrap">time (ms)</th>`, `<td style="text-align:left">&lt;script&gt;</td>`,
		`<td style="text-align:right;white-space:nowrap">1.5 ms</td>`, "<li><b>second</b></li>", "<p>More</p>", "<td style=\"text-align:left\">y</td>",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "<script>") {
		t.Errorf("a cell's markup was not escaped:\n%s", h)
	}
}

func TestReportHTMLInlinesFiguresAndSkipsCSVOnlyTables(t *testing.T) {
	r := sample(false)
	r.Title = "Exp"
	r.Tables = append(r.Tables, &Table{Name: "t", NoMarkdown: true, Header: []string{"csv-only"}})
	h, err := r.HTML()
	if err != nil {
		t.Fatal(err)
	}
	img := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("PNG:png"))
	for _, want := range []string{"<h3>Exp</h3>", "<p><b>Table</b></p>", img, "<figcaption>a figure</figcaption>"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "csv-only") {
		t.Error("a CSV-only table was rendered")
	}
	if _, err := sample(true).HTML(); err == nil || !strings.Contains(err.Error(), "renderer broke") {
		t.Errorf("a failing figure gave %v", err)
	}
}

func TestMarkdownHTMLInline(t *testing.T) {
	for md, want := range map[string]string{
		"a *b* c":                   "<p>a <i>b</i> c</p>\n",
		"`*not*` **x**":             "<p><code>*not*</code> <b>x</b></p>\n",
		"[dfx](https://x.org) & y":  `<p><a href="https://x.org">dfx</a> &amp; y</p>` + "\n",
		"[bad](javascript:alert)":   "<p>bad</p>\n",
		"# One\ntwo\nthree\n\nfour": "<h3>One</h3>\n<p>two three</p>\n<p>four</p>\n",
		"- a\n  continued\n- b":     "<ul>\n<li>a continued</li>\n<li>b</li>\n</ul>\n",
		"2 * 3 = 6, 4*5":            "<p>2 * 3 = 6, 4*5</p>\n",
		"# T\n\n| a | b |\n| --- | ---: |\n| `x` | 1 |\nafter": "<h3>T</h3>\n<table>\n<thead><tr><th style=\"text-align:left\">a</th><th style=\"text-align:right;white-space:nowrap\">b</th></tr></thead>\n" +
			"<tbody>\n<tr><td style=\"text-align:left\"><code>x</code></td><td style=\"text-align:right;white-space:nowrap\">1</td></tr>\n</tbody>\n</table>\n<p>after</p>\n",
		"|Δ| is the change\n## H":           "<p>|Δ| is the change</p>\n<h3>H</h3>\n",
		"- a\n  |x| is the norm\n- b":       "<ul>\n<li>a |x| is the norm</li>\n<li>b</li>\n</ul>\n",
		"- a\n| h |\n| :---: |\n| c |":      "<ul>\n<li>a</li>\n</ul>\n<table>\n<thead><tr><th style=\"text-align:center\">h</th></tr></thead>\n<tbody>\n<tr><td style=\"text-align:center\">c</td></tr>\n</tbody>\n</table>\n",
		"| \\|miss\\| | b |\n| --- | --- |": "<table>\n<thead><tr><th style=\"text-align:left\">|miss|</th><th style=\"text-align:left\">b</th></tr></thead>\n<tbody>\n</tbody>\n</table>\n",
	} {
		if got := markdownHTML(md); got != want {
			t.Errorf("markdownHTML(%q) = %q, want %q", md, got, want)
		}
	}
}

func TestTableHTMLRightAlignsNumbersWhereAlignIsSilent(t *testing.T) {
	h := (&Table{Header: []string{"name", "value", "mixed"}, Rows: [][]string{{"a", "1.5 ms", "2"}, {"b", "−3e-4", "n/a"}}}).HTML()
	for _, want := range []string{`<td style="text-align:left">a</td>`, `<td style="text-align:right;white-space:nowrap">−3e-4</td>`, `<td style="text-align:left">n/a</td>`} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q:\n%s", want, h)
		}
	}
}

func ExampleTable_HTML() {
	t := &Table{Name: "demo", Columns: []Column{{Name: "t", Format: "%.1f"}, {Name: "DF-TM error", Unit: "%", Format: "%.4g %%"}}}
	t.Add(Float(1), Float(0.06))
	t.Add(Float(0.2), Float(4210))
	fmt.Print(t.HTML())
	// Output:
	// <div class="dfx-table"><table>
	// <thead><tr><th style="text-align:right;white-space:nowrap">t</th><th style="text-align:right;white-space:nowrap">DF-TM error</th></tr></thead>
	// <tbody>
	// <tr><td style="text-align:right;white-space:nowrap">1.0</td><td style="text-align:right;white-space:nowrap">0.06 %</td></tr>
	// <tr><td style="text-align:right;white-space:nowrap">0.2</td><td style="text-align:right;white-space:nowrap">4210 %</td></tr>
	// </tbody>
	// </table>
	// </div>
}

// What Table.Markdown writes, MarkdownHTML reads back: the same header and
// cells (a "|" inside a cell included) as Table.HTML renders.
func TestMarkdownHTMLReadsTableMarkdown(t *testing.T) {
	tb := &Table{Title: "## T", Header: []string{"name", "a|b", "value"}, Align: "lcr",
		Rows: [][]string{{"x", "p|q", "1.5"}, {"y", "`c`", "−2"}}, Notes: []string{"a note"}}
	h := MarkdownHTML(tb.Markdown())
	cellsOf := func(h string) []string {
		return regexp.MustCompile(`<t[hd][^>]*>(.*?)</t[hd]>`).FindAllString(h, -1)
	}
	want, got := cellsOf(tb.HTML()), cellsOf(h)
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Errorf("MarkdownHTML(Markdown()) cells\n%q\nTable.HTML cells\n%q", got, want)
	}
	if !strings.Contains(h, "<p>a note</p>") || !strings.Contains(h, "<h3>T</h3>") {
		t.Errorf("title or note lost:\n%s", h)
	}
}
