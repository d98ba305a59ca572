package input

import (
	"context"
	"io"
	"os"
	"sync"
)

// ContextReader reads r until ctx is done, then returns ctx's error at
// once, even while a read of r is blocked (standard input from a pipe whose
// writer sends nothing): r is read in a goroutine, started by the first
// Read, so nothing is read from r unless the reader is used. The goroutine
// stays blocked in r's read after a cancel; it is meant for a process that
// ends on the cancel, as the CLI does on an interrupt.
func ContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &ctxReader{ctx: ctx, r: r, ch: make(chan chunk)}
}

type chunk struct {
	b   []byte
	err error
}

type ctxReader struct {
	ctx     context.Context
	r       io.Reader
	once    sync.Once
	ch      chan chunk
	pending []byte
	err     error
}

// file is the *os.File under the reader, if any (a regular file is read
// directly: its reads do not block).
func (c *ctxReader) file() (*os.File, bool) {
	f, ok := c.r.(*os.File)
	return f, ok
}

func (c *ctxReader) pump() {
	for {
		buf := make([]byte, 1<<16)
		n, err := c.r.Read(buf)
		if n == 0 && err == nil {
			continue
		}
		select {
		case c.ch <- chunk{buf[:n], err}:
		case <-c.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(c.pending) == 0 && c.err == nil {
		c.once.Do(func() { go c.pump() })
		select {
		case k := <-c.ch:
			c.pending, c.err = k.b, k.err
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		}
	}
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return 0, c.err
}
