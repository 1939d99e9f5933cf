package server

import (
	"errors"
	"io"
	"sync"
)

// DefaultMaxBodyBytesInFlight is the default of Config.MaxBodyBytesInFlight:
// four request bodies of the default largest size.
const DefaultMaxBodyBytesInFlight = 4 * DefaultMaxBodyBytes

// errBodyBudget is a body read refused because the server holds
// Config.MaxBodyBytesInFlight of request bodies already.
var errBodyBudget = errors.New("the server holds too many request bodies")

// errOwnerBodyBudget is a body read refused because the server holds
// Config.MaxBodyBytesPerOwner of the request owner's bodies already.
var errOwnerBodyBudget = errors.New("the server holds too many request bodies of this owner")

// bodyBudget bounds the bytes of the request bodies the server holds at once,
// in all and per owner. A request's body is held from its first byte read until
// the request ends (an append's entries are slices of its body), so without a
// bound the server's memory grew with every concurrent large append, each up to
// MaxBodyBytes; and without a bound per owner one owner's concurrent large (or
// slow) appends took the whole budget, and every other owner's append, however
// small, was answered 503 until they ended.
type bodyBudget struct {
	max, perOwner int64

	mu      sync.Mutex
	used    int64
	byOwner map[string]int64
}

// reader returns body counted against the budget: a read that would take the
// bytes held past a bound fails with errBodyBudget or errOwnerBodyBudget. The
// caller sets the reader's owner once it is known (before the body is read),
// and calls release once the request is done with the body.
func (b *bodyBudget) reader(body io.ReadCloser) *budgetReader {
	return &budgetReader{ReadCloser: body, budget: b}
}

// take counts n more bytes of owner's, or fails when they would take the bytes
// held past a bound.
func (b *bodyBudget) take(owner string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.used+n > b.max:
		return errBodyBudget
	case b.byOwner[owner]+n > b.perOwner:
		return errOwnerBodyBudget
	}
	b.used += n
	if b.byOwner == nil {
		b.byOwner = map[string]int64{}
	}
	b.byOwner[owner] += n
	return nil
}

// give gives back n bytes of owner's.
func (b *bodyBudget) give(owner string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byOwner[owner] -= n; b.byOwner[owner] <= 0 {
		delete(b.byOwner, owner)
	}
}

// inFlight returns the bytes held in all.
func (b *bodyBudget) inFlight() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// budgetReader is a request body whose bytes are counted by its budget.
type budgetReader struct {
	io.ReadCloser
	budget *bodyBudget
	// owner is the request's owner (its namespace), set once authenticated.
	owner string
	// held is what the body took from the budget; reserved, the part of it
	// not read yet (see reserve).
	held, reserved int64
}

// reserve takes n bytes, the body's declared length, from the budget before
// they arrive, so that the body is read into one buffer of its size (reading
// a body of unknown size grows its buffer step by step: twice its size, and
// more, allocated) and a client that declares a large body and sends it
// slowly holds what the server set aside for it from the start.
func (r *budgetReader) reserve(n int64) error {
	if err := r.budget.take(r.owner, n); err != nil {
		return err
	}
	r.held += n
	r.reserved += n
	return nil
}

// Read reads from the body, taking what it read from the budget.
func (r *budgetReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if more := int64(n) - r.reserved; more > 0 {
		if terr := r.budget.take(r.owner, more); terr != nil {
			return 0, terr
		}
		r.held += more
	}
	r.reserved = max(r.reserved-int64(n), 0)
	return n, err
}

// release gives back what the body took from the budget.
func (r *budgetReader) release() {
	if r.held > 0 {
		r.budget.give(r.owner, r.held)
	}
	r.held, r.reserved = 0, 0
}
