package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPlainLinesCarryCountRateAndETAAndRespectTheDelay(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, "run", "steps", 10)
	m.Delay = time.Hour
	m.Set(5, "")
	if b.Len() != 0 {
		t.Fatalf("printed before the delay: %q", b.String())
	}
	m.Delay, m.Period = 0, 0
	m.Set(10, "3 chains")
	m.Done()
	out := b.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "run steps 10/10  3 chains") || !strings.Contains(out, "ETA 0s") {
		t.Fatalf("got %q", out)
	}
}

// TestNoETABeforeTheFirstUnit: before any unit is done no rate is known,
// and no ETA is made up from a rate of 0 (it read "ETA 555555h33m20s").
func TestNoETABeforeTheFirstUnit(t *testing.T) {
	var b bytes.Buffer
	m := New(&b, "nll", "batch", 4)
	m.Period = 0
	m.Set(0, "")
	if out := b.String(); out != "nll batch 0/4  ETA …\n" {
		t.Fatalf("got %q", out)
	}
}
