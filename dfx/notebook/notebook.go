// Package notebook displays dfx results in a GoNB (Jupyter) notebook, so
// that a notebook cell holds no formatting code: an experiment's Result
// renders itself through dfx/report's contract (HTML tables, inline
// figures), long work shows one updating progress line, and Knobs re-run a
// computation when a researcher turns a widget.
//
// A typical cell runs a registered experiment whole,
//
//	notebook.Run("fields")
//
// or one function of an experiment package at the notebook's profile:
//
//	res, err := likelihood.Run(notebook.Context(), mnist.Problem(), "", likelihood.MNIST(notebook.Profile()), notebook.Progress())
//	notebook.Show(res, err)
//
// Outside a notebook (a test, a plain program) every function here prints
// nothing and Show only reports errors.
//
// This package is an entry point, like cmd/dfx: it is where a notebook's
// settings come from the environment (QuickEnv, HeadlessEnv, DFX_ROOT,
// DFX_MNIST_NETS), so that no experiment package reads a variable.
package notebook

import (
	"context"
	"fmt"
	"html"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/protocol"
)

var (
	ctxOnce sync.Once
	ctx     context.Context
	current *progressLine // the cell's progress line, finished by Show
)

// Context is cancelled when the cell is stopped (Jupyter's interrupt sends
// SIGINT to the cell's program) or the program is terminated: experiments
// stop promptly, and Knobs end their loop and keep the last result.
func Context() context.Context {
	ctxOnce.Do(func() {
		ctx, _ = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	})
	return ctx
}

// Fail fails the cell: err on stderr, exit status 1 (which GoNB shows, and
// scripts/run-notebooks.sh counts as a failed notebook).
func Fail(err error) {
	if current != nil {
		current.finish("failed after " + since(current.start))
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

// Show displays a result (see ShowReport); a non-nil err fails the cell
// instead. It also closes the cell's progress line with the elapsed time.
func Show(res report.Result, err error) {
	if err != nil {
		Fail(err)
	}
	rep, err := res.Report()
	if err != nil {
		Fail(err)
	}
	ShowReport(rep)
}

// ShowReport displays every table of rep that has a Markdown view as an HTML
// table (with its Markdown as the plain alternative, for viewers without
// HTML) and every figure inline, in the report's order. A figure that fails
// to render fails the cell.
func ShowReport(rep *report.Report) {
	if current != nil {
		current.finish(fmt.Sprintf("%s: computed in %s%s", rep.Name, since(current.start), profileNote()))
	}
	for _, t := range rep.Tables {
		if !t.NoMarkdown {
			display(map[protocol.MIMEType]any{protocol.MIMETextHTML: t.HTML(), protocol.MIMETextMarkdown: t.Markdown()})
		}
	}
	for _, f := range rep.Figures {
		if stem, ok := strings.CutSuffix(f.Name, ".svg"); ok && rep.Figure(stem+".png") != nil {
			continue // the same figure as a PNG is shown
		}
		if err := showFigure(f); err != nil {
			Fail(fmt.Errorf("report %s: %w", rep.Name, err))
		}
	}
}

func showFigure(f *report.Figure) error {
	if strings.HasSuffix(f.Name, ".svg") {
		h, err := f.HTML()
		if err != nil {
			return err
		}
		display(map[protocol.MIMEType]any{protocol.MIMETextHTML: h})
		return nil
	}
	png, err := f.PNG()
	if err != nil {
		return fmt.Errorf("figure %s: %w", f.Name, err)
	}
	display(map[protocol.MIMEType]any{protocol.MIMEImagePNG: png, protocol.MIMETextPlain: f.Caption})
	if f.Caption != "" {
		display(map[protocol.MIMEType]any{
			protocol.MIMETextHTML:  `<p style="font-size:smaller;margin-top:0"><i>` + html.EscapeString(f.Name) + `</i>: ` + html.EscapeString(f.Caption) + `</p>`,
			protocol.MIMETextPlain: f.Name + ": " + f.Caption,
		})
	}
	return nil
}

func display(data map[protocol.MIMEType]any) {
	if gonbui.IsNotebook {
		gonbui.SendData(&protocol.DisplayData{Data: data})
	}
}

// ShowCommitted displays committed outputs of a run that takes too long to
// repeat in a notebook (hours of training, say): files of figures/<dir>
// in the repository, in the order given — Markdown tables (.md) rendered,
// figures (.png) inline.
func ShowCommitted(dir string, names ...string) {
	root := filepath.Join(RepoRoot(), "figures", dir)
	for _, n := range names {
		data, err := input.ReadAll(filepath.Join(root, n), 1<<30)
		if err != nil {
			Fail(fmt.Errorf("committed results: %w", err))
		}
		switch filepath.Ext(n) {
		case ".png":
			display(map[protocol.MIMEType]any{protocol.MIMEImagePNG: data, protocol.MIMETextPlain: "figures/" + dir + "/" + n})
		case ".md": // HTML too: the classic notebook shows no Markdown output
			display(map[protocol.MIMEType]any{protocol.MIMETextHTML: report.MarkdownHTML(string(data)), protocol.MIMETextMarkdown: string(data)})
		default:
			display(map[protocol.MIMEType]any{protocol.MIMETextPlain: string(data)})
		}
	}
	note := `<p style="font-size:smaller"><i>committed results from <code>figures/` + html.EscapeString(dir) + `/</code></i></p>`
	display(map[protocol.MIMEType]any{protocol.MIMETextHTML: note})
}

// RepoRoot is the folder of the dfx module this package was built from
// (notebooks use the repository through a go.work, so its sources are there).
func RepoRoot() string {
	if r := os.Getenv("DFX_ROOT"); r != "" {
		return r
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// QuickEnv, set to 1, selects the quick profile (Profile): the notebook
// runner (scripts/run-notebooks.sh) and `make test` set it.
const QuickEnv = "DFX_QUICK"

// Profile is the notebooks' profile: report.Quick under DFX_QUICK=1,
// report.Full otherwise.
func Profile() report.Profile {
	handed = report.Full
	if os.Getenv(QuickEnv) == "1" {
		handed = report.Quick
	}
	return handed
}

// QuickProfile is report.Quick, for a cell that always runs the quick
// profile (beside committed full results); the cell's progress line says
// so.
func QuickProfile() report.Profile {
	handed = report.Quick
	return handed
}

// handed is the profile the cell asked for (Profile or QuickProfile), ""
// when it asked for none: the progress line names it, and names none when
// the cell built its configuration otherwise.
var handed report.Profile

func profileNote() string {
	if handed == "" {
		return ""
	}
	return " (" + string(handed) + " profile)"
}

// Nets is the folder of the networks a notebook uses: DFX_MNIST_NETS, or
// "" for the committed ones.
func Nets() string { return os.Getenv("DFX_MNIST_NETS") }

// Run runs the registered experiment name (report.Lookup; the cell imports
// its package, e.g. _ "github.com/dfx-lab/dfx/studies/access") at Profile,
// with a progress line, and shows each of its results.
func Run(name string) { RunAt(name, Profile()) }

// RunQuick is Run at the quick profile, for a cell beside committed full
// results whose full profile is too long for a notebook.
func RunQuick(name string) { RunAt(name, QuickProfile()) }

// RunAt runs the registered experiment name at profile p: its job's check,
// then its run, on the networks of DFX_MNIST_NETS ("": the committed ones).
func RunAt(name string, p report.Profile) {
	e, ok := report.Lookup(name)
	if !ok {
		var names []string
		for _, e := range report.Experiments() {
			names = append(names, e.Name)
		}
		Fail(fmt.Errorf("no experiment %q is registered (import its package; registered: %s)", name, strings.Join(names, ", ")))
		return
	}
	j := e.Configure(p, nil)
	env := report.Env{Nets: Nets(), Log: Progress()}
	if err := j.Check(env); err != nil {
		Fail(fmt.Errorf("%s: %w", name, err))
		return
	}
	res, err := j.Run(Context(), env)
	if err != nil {
		Show(nil, err)
		return
	}
	for _, r := range report.Split(res) {
		Show(r, nil)
	}
}

func since(t time.Time) string {
	d := time.Since(t)
	if d < 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f s", d.Seconds())
}

// Progress returns a writer for an experiment's progress log that shows
// only its latest line, as one line updated in place (at most five times a
// second), instead of a growing log. Show replaces it with the elapsed time.
func Progress() io.Writer {
	if current == nil {
		current = &progressLine{id: "dfx-progress-" + gonbui.UniqueID(), start: time.Now()}
	}
	return current
}

type progressLine struct {
	mu      sync.Mutex
	id      string
	start   time.Time
	partial []byte
	last    string
	shown   time.Time
	done    bool
}

func (p *progressLine) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := strings.IndexAny(string(p.partial), "\r\n")
		if i < 0 {
			break
		}
		if line := strings.TrimSpace(string(p.partial[:i])); line != "" {
			p.last = line
		}
		p.partial = p.partial[i+1:]
	}
	if p.last != "" && !p.done && time.Since(p.shown) > 200*time.Millisecond {
		p.showLocked(fmt.Sprintf("%s  [%s]", p.last, since(p.start)))
	}
	return len(b), nil
}

func (p *progressLine) showLocked(line string) {
	p.shown = time.Now()
	if gonbui.IsNotebook {
		gonbui.UpdateHTML(p.id, `<pre style="margin:0;color:#555;white-space:pre-wrap">`+html.EscapeString(line)+`</pre>`)
	}
}

func (p *progressLine) finish(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.showLocked(line)
		p.done = true
	}
}

// restartProgress makes the cell's progress line (if any) show a new run.
func restartProgress() {
	if current != nil {
		current.mu.Lock()
		current.start, current.done, current.last = time.Now(), false, ""
		current.mu.Unlock()
	}
}

// finishProgress closes the progress line of a run that ended with err.
func finishProgress(err error) {
	if current == nil {
		return
	}
	if err != nil {
		current.finish("failed after " + since(current.start))
		return
	}
	current.finish(fmt.Sprintf("computed in %s%s", since(current.start), profileNote()))
}

// Must fails the cell when err is not nil (see Fail).
func Must(err error) {
	if err != nil {
		Fail(err)
	}
}

// Markdown displays Markdown text (a heading, a note, a table a package
// renders as Markdown), as HTML too: the classic notebook shows no Markdown
// output.
func Markdown(md string) {
	display(map[protocol.MIMEType]any{protocol.MIMETextHTML: report.MarkdownHTML(md), protocol.MIMETextMarkdown: md, protocol.MIMETextPlain: md})
}
