// Package progress displays a long run's progress on stderr: on a terminal
// one line redrawn in place (bar, detail, rate, ETA) at most five times a
// second; on anything else (a log file, CI, a notebook's stderr) a plain
// line every Period and at the end.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Meter is one display of total units of work named name.
type Meter struct {
	w        io.Writer
	name     string
	unit     string
	total    int
	done     int
	start    time.Time
	last     time.Time
	shown    bool
	terminal bool
	// Period between plain lines when w is not a terminal (default 10 s).
	Period time.Duration
	// Delay before the first display: a run shorter than it prints
	// nothing (default 0).
	Delay time.Duration
}

// New starts a display of total units (e.g. "steps") named name on w.
func New(w io.Writer, name, unit string, total int) *Meter {
	p := &Meter{w: w, name: name, unit: unit, total: total, start: time.Now(), Period: 10 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal = true
	}
	p.last = p.start
	return p
}

// Terminal reports whether the display redraws one line.
func (p *Meter) Terminal() bool { return p.terminal }

// Set records that done units are finished; detail (may be empty) is shown
// after the count.
func (p *Meter) Set(done int, detail string) {
	p.done = done
	now := time.Now()
	if now.Sub(p.start) < p.Delay {
		return
	}
	every := p.Period
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.last) < every && p.done < p.total {
		return
	}
	p.last = now
	p.print(detail, now)
}

// Add records n more finished units.
func (p *Meter) Add(n int, detail string) { p.Set(p.done+n, detail) }

func (p *Meter) print(detail string, now time.Time) {
	el := now.Sub(p.start).Seconds()
	msg := fmt.Sprintf("%s %s %d/%d", p.name, p.unit, p.done, p.total)
	if detail != "" {
		msg += "  " + detail
	}
	msg += "  " + rateETA(p.done, p.total, el, p.unit)
	p.shown = true
	if p.terminal {
		const width = 24
		fill := min(width*p.done/max(p.total, 1), width)
		fmt.Fprintf(p.w, "\r[%s%s] %s\x1b[K", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), msg)
		return
	}
	fmt.Fprintln(p.w, msg)
}

// Done ends the display (a newline on a terminal if anything was shown).
func (p *Meter) Done() {
	if p.terminal && p.shown {
		fmt.Fprintln(p.w)
	}
}

// rateETA formats the rate and the time left after done of total units in
// el seconds. Before the first unit is finished no rate is known, and
// none is made up: "ETA …" until then.
func rateETA(done, total int, el float64, unit string) string {
	if done <= 0 || el <= 0 {
		return "ETA …"
	}
	rate := float64(done) / el
	left := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%.1f %s/s  ETA %s", rate, unit, left)
}
