package progress

import (
	"bytes"
	"context"
	"errors"
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

func TestStepsLogsNamesWrapsErrorsAndStopsOnCancel(t *testing.T) {
	var log strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	step := Steps(ctx, &log, "exp")
	if err := step("a", func() error { return nil }); err != nil {
		t.Fatalf("a: %v", err)
	}
	boom := errors.New("boom")
	if err := step("b", func() error { return boom }); !errors.Is(err, boom) || !strings.Contains(err.Error(), "exp: b: boom") {
		t.Errorf("b: %v, want exp: b: boom", err)
	}
	cancel()
	if err := step("c", func() error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
	if !strings.Contains(log.String(), "exp: a …\nexp: a done in") {
		t.Errorf("log %q", log.String())
	}
}
