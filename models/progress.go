package models

import (
	"fmt"
	"io"

	"github.com/dfx-lab/dfx/internal/progress"
)

// Progress displays a training run's progress (see internal/progress): on
// a terminal one line redrawn in place (bar, loss, steps/s, ETA); on
// anything else a plain line every Period and at the end.
type Progress struct {
	m *progress.Meter
}

// NewProgress starts a display of total steps named name on w.
func NewProgress(w io.Writer, name string, total int) *Progress {
	return &Progress{m: progress.New(w, name, "step", total)}
}

// Update records one finished step with its batch loss and a smoothed loss.
func (p *Progress) Update(loss, smoothed float64) {
	p.m.Add(1, fmt.Sprintf("loss %.4g (smoothed %.4g)", loss, smoothed))
}

// Done ends the display (a newline on a terminal).
func (p *Progress) Done() { p.m.Done() }
