package repository

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ForkOptions are the fields of a fork.
type ForkOptions struct {
	// ID is the new session's id; empty means a new random UUID. An id that
	// exists gives an error wrapping bucket.ErrExists.
	ID string
	// At is the entry the fork ends at: the new session holds the path from the
	// root to it. Empty makes an empty fork: the header alone, still naming the
	// source as parentSession (Pi forks so before the first user message).
	At string
	// Whole copies every entry of the source, every branch, in sequence order
	// (Pi's fork without an entry); At is then ignored.
	Whole bool
	// Cwd is recorded in the new session's header; empty means the source's.
	Cwd string
}

// EntryNotFoundError is a fork at an entry that the source session does not
// hold (or that cannot be on a path: a "leaf" entry). It wraps bucket.ErrNotFound.
type EntryNotFoundError struct {
	Session, Entry string
}

func (e *EntryNotFoundError) Error() string {
	return fmt.Sprintf("session %q: entry %q: %v", e.Session, e.Entry, bucket.ErrNotFound)
}

// Unwrap returns bucket.ErrNotFound.
func (e *EntryNotFoundError) Unwrap() error { return bucket.ErrNotFound }

// Fork creates a new session whose history is the path from the root to entry
// atEntryID of session id (byte-for-byte; "" for an empty fork), with
// parentSession set to id in its header. The fork is strict if the source is. It
// returns the new session. See ForkSession.
func (r *Repository) Fork(ctx context.Context, id, atEntryID string) (*Session, error) {
	src, err := r.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return r.ForkSession(ctx, src, ForkOptions{At: atEntryID})
}

// ForkSession forks src as its handle holds it (no read of src; Refresh it
// first to fork what the store holds): the new session, in this repository,
// holds the path from the root to opts.At byte-for-byte (or nothing, or every
// entry), its header
// names src as parentSession, and it is strict if src is. src must be a session
// of this repository's owner (a handle of another Repository of the same owner
// will do). An entry src does not hold gives an *EntryNotFoundError.
func (r *Repository) ForkSession(ctx context.Context, src *Session, opts ForkOptions) (*Session, error) {
	src.mu.Lock()
	var path []pi.Entry
	ok := true
	switch {
	case opts.Whole:
		path = slices.Clone(src.entries)
	case opts.At != "":
		path, ok = pi.PathToRoot(src.entries, pi.NewIndex(src.entries), opts.At)
	}
	cwd, strict := src.header.Cwd(), src.strict
	src.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("fork: %w", &EntryNotFoundError{Session: src.id, Entry: opts.At})
	}
	if opts.ID == "" {
		id, err := uuid.NewRandomFromReader(r.cfg.Rand)
		if err != nil {
			return nil, fmt.Errorf("fork session %q: %w", src.id, err)
		}
		opts.ID = id.String()
	}
	if opts.Cwd != "" {
		cwd = opts.Cwd
	}
	return r.create(ctx, CreateOptions{ID: opts.ID, Cwd: cwd, Strict: strict}, src.id, rawsOf(path))
}
