package progress

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Steps returns a runner of an experiment's named parts: it writes
// "<prefix>: <name> …" and the part's time to log, wraps the part's error
// with its name, and stops once ctx is done.
func Steps(ctx context.Context, log io.Writer, prefix string) func(name string, f func() error) error {
	return func(name string, f func() error) error {
		t := time.Now()
		fmt.Fprintf(log, "%s: %s …\n", prefix, name)
		if err := f(); err != nil {
			return fmt.Errorf("%s: %s: %w", prefix, name, err)
		}
		fmt.Fprintf(log, "%s: %s done in %.1fs\n", prefix, name, time.Since(t).Seconds())
		return ctx.Err()
	}
}
