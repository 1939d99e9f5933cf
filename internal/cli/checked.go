package cli

import (
	"cmp"
	"io"
	"sync"
)

// CheckedWriter is a writer that keeps the first error of a write to it, so
// that a command whose output could not be written (a full disk, a closed pipe)
// fails, also where it writes from many places without checking each write. It
// is safe for concurrent use.
type CheckedWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

// NewCheckedWriter returns a CheckedWriter writing to w.
func NewCheckedWriter(w io.Writer) *CheckedWriter { return &CheckedWriter{w: w} }

// Write writes p to the underlying writer and keeps its error, if it is the first.
func (c *CheckedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.mu.Lock()
		c.err = cmp.Or(c.err, err)
		c.mu.Unlock()
	}
	return n, err
}

// Err returns the first error a write met, or nil.
func (c *CheckedWriter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
