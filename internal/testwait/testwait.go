// Package testwait holds what the project's tests share about waiting and
// cancelling: how long a test may wait on a loaded machine, and a context
// that cancels itself at a chosen check.
package testwait

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Env names the variable that sets Limit: seconds, or a Go duration such
// as 30m.
const Env = "DFX_TEST_WAIT"

// Limit is how long a test waits for a condition before it fails: long
// enough for a loaded 2-core machine (15 min), or what Env says, and in a
// test with a deadline at most nine tenths of the time left, so that the
// test's own message is what is reported, not the binary's timeout.
func Limit(t testing.TB) time.Duration {
	t.Helper()
	limit, err := parseLimit(os.Getenv(Env))
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			limit = min(limit, time.Until(end)*9/10)
		}
	}
	return limit
}

func parseLimit(v string) (time.Duration, error) {
	if v == "" {
		return 15 * time.Minute, nil
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%s=%q: want seconds or a duration such as 30m", Env, v)
}

// Counting is a context that counts the calls of Err and cancels itself at
// the CancelAt-th (0: never): where a computation checks for cancellation,
// and whether it stops at the first check after a cancel.
type Counting struct {
	context.Context
	cancel          context.CancelFunc
	Calls, CancelAt int
}

// NewCounting returns a Counting context that cancels itself at the
// cancelAt-th call of Err.
func NewCounting(cancelAt int) *Counting {
	ctx, cancel := context.WithCancel(context.Background())
	return &Counting{Context: ctx, cancel: cancel, CancelAt: cancelAt}
}

// Err counts the call, cancels at the CancelAt-th, and reports the
// context's state.
func (c *Counting) Err() error {
	c.Calls++
	if c.Calls == c.CancelAt {
		c.cancel()
	}
	return c.Context.Err()
}
