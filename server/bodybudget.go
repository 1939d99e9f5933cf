package server

import (
	"errors"
	"io"
	"sync/atomic"
)

// DefaultMaxBodyBytesInFlight is the default of Config.MaxBodyBytesInFlight:
// four request bodies of the default largest size.
const DefaultMaxBodyBytesInFlight = 4 * DefaultMaxBodyBytes

// errBodyBudget is a body read refused because the server holds
// Config.MaxBodyBytesInFlight of request bodies already.
var errBodyBudget = errors.New("the server holds too many request bodies")

// bodyBudget bounds the bytes of the request bodies the server holds at once.
// A request's body is held from its first byte read until the request ends (an
// append's entries are slices of its body), so without a bound the server's
// memory grew with every concurrent large append, each up to MaxBodyBytes.
type bodyBudget struct {
	max  int64
	used atomic.Int64
}

// reader returns body counted against the budget: a read that would take the
// bytes held past the bound fails with errBodyBudget. The caller calls release
// once the request is done with the body.
func (b *bodyBudget) reader(body io.ReadCloser) *budgetReader {
	return &budgetReader{ReadCloser: body, budget: b}
}

// budgetReader is a request body whose bytes are counted by its budget.
type budgetReader struct {
	io.ReadCloser
	budget *bodyBudget
	held   int64
}

// Read reads from the body, taking what it read from the budget.
func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if n > 0 {
		if r.budget.used.Add(int64(n)) > r.budget.max {
			r.budget.used.Add(-int64(n))
			return 0, errBodyBudget
		}
		r.held += int64(n)
	}
	return n, err
}

// release gives back what the body took from the budget.
func (r *budgetReader) release() {
	r.budget.used.Add(-r.held)
	r.held = 0
}
