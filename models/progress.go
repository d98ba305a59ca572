package models

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Progress displays a long run's progress: on a terminal one line redrawn
// in place (bar, loss, steps/s, ETA) at most five times a second; on
// anything else (a log file, CI, a notebook's stderr) a plain line every
// Period and at the end.
type Progress struct {
	w        io.Writer
	name     string
	total    int
	done     int
	start    time.Time
	last     time.Time
	terminal bool
	// Period between plain lines when w is not a terminal (default 10 s).
	Period time.Duration
}

// NewProgress starts a display of total steps named name on w.
func NewProgress(w io.Writer, name string, total int) *Progress {
	p := &Progress{w: w, name: name, total: total, start: time.Now(), Period: 10 * time.Second}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal = true
	}
	p.last = p.start
	return p
}

// Update records one finished step with its batch loss and a smoothed loss.
func (p *Progress) Update(loss, smoothed float64) {
	p.done++
	now := time.Now()
	every := p.Period
	if p.terminal {
		every = 200 * time.Millisecond
	}
	if now.Sub(p.last) < every && p.done < p.total {
		return
	}
	p.last = now
	p.print(loss, smoothed, now)
}

func (p *Progress) print(loss, smoothed float64, now time.Time) {
	el := now.Sub(p.start).Seconds()
	rate := float64(p.done) / max(el, 1e-9)
	eta := time.Duration(float64(p.total-p.done) / max(rate, 1e-9) * float64(time.Second)).Round(time.Second)
	msg := fmt.Sprintf("%s step %d/%d  loss %.4g (smoothed %.4g)  %.1f steps/s  ETA %s", p.name, p.done, p.total, loss, smoothed, rate, eta)
	if p.terminal {
		const width = 24
		fill := width * p.done / max(p.total, 1)
		fmt.Fprintf(p.w, "\r[%s%s] %s\x1b[K", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), msg)
		return
	}
	fmt.Fprintln(p.w, msg)
}

// Done ends the display (a newline on a terminal).
func (p *Progress) Done() {
	if p.terminal && p.done > 0 {
		fmt.Fprintln(p.w)
	}
}
