package notebook

import (
	"context"
	"fmt"
	"html"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dfx-lab/dfx/dfx/report"
	"github.com/janpfeifer/gonb/gonbui"
	"github.com/janpfeifer/gonb/gonbui/comms"
	"github.com/janpfeifer/gonb/gonbui/dom"
	"github.com/janpfeifer/gonb/gonbui/protocol"
	"github.com/janpfeifer/gonb/gonbui/widgets"
)

// HeadlessEnv, set to 1, tells Knobs that no browser is attached (the
// notebook runner, scripts/run-notebooks.sh, sets it): the knobs keep their
// defaults and the computation runs once. Without it, Knobs wait
// FrontEndWait for the browser's widgets before falling back to the same.
const HeadlessEnv = "DFX_NOTEBOOK_HEADLESS"

// FrontEndWait is how long Knobs wait for a browser to answer before they
// run unattended. A cell with a browser attached shows its widgets as soon
// as they are ready, so only a kernel without a browser and without
// HeadlessEnv waits this long.
var FrontEndWait = 120 * time.Second

// WidgetRetry is how long one set of widgets may wait for the browser's
// first answer before Knobs draw them again. GoNB installs its browser
// connection when a cell first asks for widgets; on a fresh page that can
// fail and leave the first widgets unanswered for good, while the same
// cell run again works at once (seen in clean-clone CI runs). Drawing the
// widgets again is that rerun, done for the reader.
var WidgetRetry = 20 * time.Second

// Knobs is a panel of widgets (sliders and drop-down lists) above one
// result. Explore runs a computation with the knobs' values and shows its
// result; in a live notebook it runs it again whenever a knob is turned,
// until the cell is stopped (Jupyter's ■) or "Done" is pressed, and the last
// result stays in the notebook. Without a browser (a headless run, CI) the
// knobs are shown at their defaults, disabled, and the computation runs
// once: every Knobs cell also runs unattended.
type Knobs struct {
	knobs []*Knob
}

// Knob is one control: a choice among Options (a drop-down list) or a
// position on a list of Values (a slider).
type Knob struct {
	Label   string
	Options []string  // what is shown for each position
	Values  []float64 // a slider's values; nil for a drop-down list
	index   int
	valueID string
}

// Index is the position chosen.
func (k *Knob) Index() int { return k.index }

// String is the option chosen.
func (k *Knob) String() string { return k.Options[k.index] }

// Float is a slider's value, or a drop-down list's option read as a number (0 if it is not one).
func (k *Knob) Float() float64 {
	if k.Values != nil {
		return k.Values[k.index]
	}
	v, _ := strconv.ParseFloat(k.String(), 64)
	return v
}

// NewKnobs starts an empty panel.
func NewKnobs() *Knobs { return &Knobs{} }

// Choice adds a drop-down list of options, def chosen at first.
func (ks *Knobs) Choice(label string, options []string, def int) *Knob {
	if def < 0 || def >= len(options) {
		panic(fmt.Sprintf("notebook: knob %q: default %d of %d options", label, def, len(options)))
	}
	k := &Knob{Label: label, Options: options, index: def}
	ks.knobs = append(ks.knobs, k)
	return k
}

// Slider adds a slider over values, values[def] at first.
func (ks *Knobs) Slider(label string, values []float64, def int) *Knob {
	if def < 0 || def >= len(values) {
		panic(fmt.Sprintf("notebook: knob %q: default %d of %d values", label, def, len(values)))
	}
	opts := make([]string, len(values))
	for i, v := range values {
		opts[i] = strconv.FormatFloat(v, 'g', 4, 64)
	}
	k := &Knob{Label: label, Options: opts, Values: values, index: def}
	ks.knobs = append(ks.knobs, k)
	return k
}

// Explore runs compute with the knobs' current values and shows its
// result, again after each change in a live notebook (see Knobs). An error
// fails the cell when it comes from the defaults; after a change it is
// shown in place of the result, and the knobs stay live.
func (ks *Knobs) Explore(compute func(ctx context.Context) (report.Result, error)) {
	ctx := Context()
	if !gonbui.IsNotebook || os.Getenv(HeadlessEnv) == "1" {
		ks.once(ctx, compute)
		return
	}
	uid := gonbui.UniqueID()
	panelDisplay := "dfx-knobs-" + uid
	chans, ok := ks.buildLive(ctx, panelDisplay, uid)
	if !ok {
		if ctx.Err() == nil {
			gonbui.UpdateHTML(panelDisplay, "") // no browser answered: run unattended
			ks.once(ctx, compute)
		}
		return
	}
	done := chans[len(chans)-1]
	changed := make(chan int, 16)
	for i, c := range chans[:len(chans)-1] {
		go func() {
			for v := range c.C {
				ks.knobs[i].index = min(max(v, 0), len(ks.knobs[i].Options)-1)
				changed <- i
			}
		}()
	}
	outDisplay := "dfx-knob-out-" + uid
	render := func() string {
		gonbui.UpdateHTML(outDisplay, `<p style="color:#555"><i>computing with `+html.EscapeString(ks.summary())+` …</i></p>`)
		restartProgress()
		res, err := compute(ctx)
		finishProgress(err)
		if err == nil {
			var rep *report.Report
			if rep, err = res.Report(); err == nil {
				var h string
				if h, err = rep.HTML(); err == nil {
					gonbui.UpdateHTML(outDisplay, h)
					return h
				}
			}
		}
		h := `<pre style="color:#b00">` + html.EscapeString(err.Error()) + `</pre>`
		gonbui.UpdateHTML(outDisplay, h)
		return h
	}
	last := render()
loop:
	for {
		select {
		case i := <-changed:
			time.Sleep(150 * time.Millisecond) // let a dragged slider settle
		drain:
			for {
				select {
				case j := <-changed:
					ks.setLabel(ks.knobs[j])
				default:
					break drain
				}
			}
			ks.setLabel(ks.knobs[i])
			last = render()
		case <-done.C:
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	// Keep what the notebook will save: the knobs' final values and the last result.
	gonbui.UpdateHTML(panelDisplay, ks.staticHTML(""))
	gonbui.UpdateHTML(outDisplay, last)
}

// liveWidgets are one drawing of the knobs: a channel per knob, then the
// Done button's, and the id of each slider's value label ("" for a list).
type liveWidgets struct {
	chans    []*comms.AddressChan[int]
	labelIDs []string
}

// buildLive draws the widgets in the display panelDisplay and waits for the
// browser to answer, drawing them again (under a new id) every WidgetRetry
// until FrontEndWait has passed (see awaitNewest). It reports false when
// no browser answered or ctx ended. The knobs take the winning drawing's
// label ids here, on the caller's goroutine: an abandoned drawing's build
// stays blocked until its widgets answer or the cell's process ends (at
// most FrontEndWait/WidgetRetry of them per Explore) and touches no knob.
func (ks *Knobs) buildLive(ctx context.Context, panelDisplay, uid string) ([]*comms.AddressChan[int], bool) {
	start := make([]int, len(ks.knobs))
	for i, k := range ks.knobs {
		start[i] = k.index
	}
	live, ok := awaitNewest(ctx, WidgetRetry, FrontEndWait, func(attempt int) <-chan liveWidgets {
		id := fmt.Sprintf("%s-%d", uid, attempt)
		panelID := "dfx-knobs-div-" + id
		gonbui.UpdateHTML(panelDisplay, fmt.Sprintf(`<div id="%s" style="display:flex;flex-wrap:wrap;gap:0.3em 1.2em;align-items:center"></div>`, panelID))
		answer := make(chan liveWidgets, 1)
		go func() { answer <- ks.build(panelID, id, start) }()
		return answer
	})
	if !ok {
		return nil, false
	}
	for i, k := range ks.knobs {
		k.valueID = live.labelIDs[i]
	}
	return live.chans, true
}

// awaitNewest starts attempt 0 and waits for its answer; every retry
// without one it starts the next attempt and waits for that one only (an
// older attempt's answer is ignored: what it drew is no longer shown). It
// gives up after giveUp, or when ctx ends.
func awaitNewest[T any](ctx context.Context, retry, giveUp time.Duration, attempt func(n int) <-chan T) (T, bool) {
	var zero T
	end := time.After(giveUp)
	for n := 0; ; n++ {
		answer := attempt(n)
		select {
		case v := <-answer:
			return v, true
		case <-time.After(retry):
		case <-end:
			return zero, false
		case <-ctx.Done():
			return zero, false
		}
	}
}

// build creates the live widgets in panelID, knob i at position start[i].
// It blocks until the browser answers, and reads only what a knob never
// changes (its label and options).
func (ks *Knobs) build(panelID, uid string, start []int) liveWidgets {
	var w liveWidgets
	for i, k := range ks.knobs {
		dom.Append(panelID, `<span><b>`+html.EscapeString(k.Label)+`</b> `)
		if k.Values != nil {
			labelID := fmt.Sprintf("dfx-knob-%s-%d", uid, i)
			s := widgets.Slider(0, len(k.Values)-1, start[i]).AppendTo(panelID).Done()
			dom.Append(panelID, fmt.Sprintf(` <code id="%s">%s</code></span>`, labelID, html.EscapeString(k.Options[start[i]])))
			w.chans = append(w.chans, s.Listen().LatestOnly())
			w.labelIDs = append(w.labelIDs, labelID)
		} else {
			s := widgets.Select(k.Options).SetDefault(start[i]).AppendTo(panelID).Done()
			dom.Append(panelID, `</span>`)
			w.chans = append(w.chans, s.Listen().LatestOnly())
			w.labelIDs = append(w.labelIDs, "")
		}
	}
	b := widgets.Button("Done").AppendTo(panelID).Done()
	w.chans = append(w.chans, b.Listen())
	return w
}

func (ks *Knobs) setLabel(k *Knob) {
	if k.valueID != "" {
		dom.SetInnerText(k.valueID, k.String())
	}
}

// once shows the knobs at their values, disabled, and the result of one run.
func (ks *Knobs) once(ctx context.Context, compute func(ctx context.Context) (report.Result, error)) {
	display(map[protocol.MIMEType]any{protocol.MIMETextHTML: ks.staticHTML("run this cell in Jupyter to turn the knobs"), protocol.MIMETextPlain: ks.summary()})
	res, err := compute(ctx)
	Show(res, err)
}

// staticHTML draws the knobs as disabled controls at their values.
func (ks *Knobs) staticHTML(hint string) string {
	var b strings.Builder
	b.WriteString(`<div class="dfx-knobs" style="display:flex;flex-wrap:wrap;gap:0.3em 1.2em;align-items:center">`)
	for _, k := range ks.knobs {
		fmt.Fprintf(&b, `<span style="white-space:nowrap"><b>%s</b> `, html.EscapeString(k.Label))
		if k.Values != nil {
			fmt.Fprintf(&b, `<input type="range" disabled style="width:10em;display:inline-block;vertical-align:middle" `+
				`min="0" max="%d" value="%d"> <code>%s</code>`, len(k.Values)-1, k.index, html.EscapeString(k.String()))
		} else {
			b.WriteString(`<select disabled>`)
			for i, o := range k.Options {
				sel := ""
				if i == k.index {
					sel = " selected"
				}
				fmt.Fprintf(&b, `<option%s>%s</option>`, sel, html.EscapeString(o))
			}
			b.WriteString(`</select>`)
		}
		b.WriteString(`</span>`)
	}
	if hint != "" {
		fmt.Fprintf(&b, `<span style="color:#777;font-size:smaller"><i>%s</i></span>`, html.EscapeString(hint))
	}
	b.WriteString(`</div>`)
	return b.String()
}

// summary is "label = value, …".
func (ks *Knobs) summary() string {
	parts := make([]string, len(ks.knobs))
	for i, k := range ks.knobs {
		parts[i] = k.Label + " = " + k.String()
	}
	return strings.Join(parts, ", ")
}
